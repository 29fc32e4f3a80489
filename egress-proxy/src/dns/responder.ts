/**
 * The sandboxes' DNS (docs/egress.md, "DNS"): a sandbox Pod's only name server (the operator gives
 * it `dnsPolicy: None` with the proxy's Service address), answering a name only when the session's
 * egress rules allow it (any port) or when it is the proxy's own name. Every other name gets
 * NXDOMAIN, the answer a name that does not exist gets, so a sandbox learns nothing from a name it
 * may not reach (cluster Service names, the platform's, the internet's) and cannot use the cluster
 * DNS as a channel out (a query for `<data>.attacker.example` goes nowhere). A refusal is audited
 * once per session and name a minute.
 *
 * Allowed names resolve as the proxy itself resolves them when it dials (its `lookup`, which drops
 * blocked addresses such as cloud metadata), so a sandbox sees the addresses its proxied connections
 * go to. Only A and AAAA are answered; another type of an allowed name gets an empty answer.
 *
 * Shared by every tenant, so bounded: lookups in flight per session and in all, a cache of answers
 * per name, and a source that is no sandbox is refused.
 */
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';

import { hostMatches, normalizeHost } from '../rules.js';
import type { SandboxIdentity, SessionResolver } from '../sessions.js';
import {
  buildAnswer,
  CLASS_IN,
  headerOnlyAnswer,
  parseQuery,
  QTYPE,
  RCODE,
  type DnsAnswer,
  type DnsQuery,
} from './wire.js';

/** Resolves a name to all its addresses (the proxy's filtering lookup, promisified). */
export type ResolveAll = (name: string) => Promise<LookupAddress[]>;

/** Why a query was refused, for the audit. */
export interface DnsRefusal {
  session: SandboxIdentity;
  name: string;
  qtype: number;
}

/** Options of the responder. */
export interface DnsResponderOptions {
  sessions: SessionResolver;
  /** Resolves an allowed name (blocked addresses already dropped). */
  resolve: ResolveAll;
  /** Resolves the proxy's own names (its Service); normally the system resolver. */
  resolveSelf: ResolveAll;
  /** The proxy's own names (e.g. `<service>.<namespace>.svc` and with the cluster domain). */
  selfNames: readonly string[];
  /** TTL of answers, seconds (also how long the proxy caches one). */
  ttlSeconds: number;
  /** Called once per session and refused name a minute. */
  onRefused: (r: DnsRefusal) => void;
  /** How long a query from an address the index does not know yet waits for it, ms. */
  unknownSourceWaitMs?: number;
  maxInFlightPerSession?: number;
  maxInFlight?: number;
  maxCacheEntries?: number;
  now?: () => number;
}

interface CacheEntry {
  addresses: LookupAddress[];
  notFound: boolean;
  expires: number;
}

const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA', 'EGRESS_BLOCKED']);
const REFUSAL_DEDUPE_MS = 60_000;
const MAX_REFUSALS_KEPT = 10_000;
/** Queries from unknown sources waiting for the index at once; more are refused at once. */
const MAX_WAITING = 256;

/** The entry's addresses of the question's type (IPv4 for A, IPv6 for AAAA, none for another). */
function addressesOf(entry: CacheEntry, qtype: number): string[] {
  const family = qtype === QTYPE.a ? 4 : qtype === QTYPE.aaaa ? 6 : 0;
  return entry.addresses.filter((a) => a.family === family).map((a) => a.address);
}

/** Answers sandbox queries; `answer` takes the raw query and its source address. */
export class DnsResponder {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly pending = new Map<string, Promise<CacheEntry>>();
  private readonly perSession = new Map<string, number>();
  private readonly refusals = new Map<string, number>();
  private inFlight = 0;
  private waiting = 0;
  private readonly selfNames: Set<string>;

  /** Counters for the log and tests. */
  readonly stats = { answered: 0, refused: 0, nxdomain: 0, servfail: 0, dropped: 0 };

  constructor(private readonly opts: DnsResponderOptions) {
    this.selfNames = new Set(opts.selfNames.map((n) => normalizeHost(n)).filter((n): n is string => !!n));
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /** The answer to `msg` from `source`, or undefined when nothing should be sent back. */
  async answer(msg: Buffer, source: string, maxBytes?: number): Promise<Buffer | undefined> {
    const parsed = parseQuery(msg);
    if ('error' in parsed) {
      if (parsed.id === undefined) {
        this.stats.dropped++;
        return undefined;
      }
      return headerOnlyAnswer(parsed.id, parsed.opcode ?? 0, parsed.rd ?? false, RCODE.formErr);
    }
    const q = parsed.query;
    return buildAnswer(q, await this.decide(q, source), maxBytes);
  }

  /** What to answer `q` from `source`. */
  private async decide(q: DnsQuery, source: string): Promise<DnsAnswer> {
    if (q.opcode !== 0) return { rcode: RCODE.notImp };
    const session = await this.sessionOf(source);
    if (!session) {
      this.stats.refused++;
      return { rcode: RCODE.refused };
    }
    const name = normalizeHost(q.name);
    const self = name !== undefined && this.selfNames.has(name);
    if (name === undefined || q.qclass !== CLASS_IN || !(self || this.allows(session, name))) {
      this.refused(session, q.name, q.qtype);
      this.stats.nxdomain++;
      return { rcode: RCODE.nxDomain };
    }
    const entry = this.cached(name) ?? (await this.boundedLookup(session, name, self));
    if (!entry) {
      this.stats.servfail++;
      return { rcode: RCODE.servFail };
    }
    if (entry.notFound) {
      this.stats.nxdomain++;
      return { rcode: RCODE.nxDomain };
    }
    this.stats.answered++;
    return { rcode: RCODE.noError, addresses: addressesOf(entry, q.qtype), ttl: this.opts.ttlSeconds };
  }

  /** Whether a rule of the session names `name` (any port); an address never. */
  private allows(session: SandboxIdentity, name: string): boolean {
    return isIP(name) === 0 && this.opts.sessions.rules(session).some((r) => hostMatches(r.host, name));
  }

  /** A lookup within the session's and the global in-flight bounds; undefined beyond them or on failure. */
  private async boundedLookup(
    session: SandboxIdentity,
    name: string,
    self: boolean,
  ): Promise<CacheEntry | undefined> {
    const key = `${session.namespace}/${session.name}`;
    const mine = this.perSession.get(key) ?? 0;
    if (mine >= (this.opts.maxInFlightPerSession ?? 8) || this.inFlight >= (this.opts.maxInFlight ?? 64)) {
      return undefined;
    }
    this.perSession.set(key, mine + 1);
    this.inFlight++;
    try {
      return await this.lookup(name, self);
    } catch {
      return undefined;
    } finally {
      this.inFlight--;
      const left = (this.perSession.get(key) ?? 1) - 1;
      if (left > 0) this.perSession.set(key, left);
      else this.perSession.delete(key);
    }
  }

  /** The session of a source, waiting briefly for an address the index has not seen yet (a Pod just started). */
  private async sessionOf(source: string): Promise<SandboxIdentity | undefined> {
    const found = this.opts.sessions.byAddress(source);
    if (found || this.waiting >= MAX_WAITING) return found;
    this.waiting++;
    try {
      return await this.waitFor(source);
    } finally {
      this.waiting--;
    }
  }

  private async waitFor(source: string): Promise<SandboxIdentity | undefined> {
    const deadline = this.now() + (this.opts.unknownSourceWaitMs ?? 1000);
    while (this.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      const later = this.opts.sessions.byAddress(source);
      if (later) return later;
    }
    return undefined;
  }

  private cached(name: string): CacheEntry | undefined {
    const hit = this.cache.get(name);
    if (hit && hit.expires > this.now()) return hit;
    if (hit) this.cache.delete(name);
    return undefined;
  }

  /** One lookup per name at a time; the result cached for the TTL. */
  private lookup(name: string, self: boolean): Promise<CacheEntry> {
    const running = this.pending.get(name);
    if (running) return running;
    const resolve = self ? this.opts.resolveSelf : this.opts.resolve;
    const p = resolve(name)
      .then(
        (addresses) => {
          const seen = new Set<string>();
          const unique = addresses.filter((a) => !seen.has(a.address) && seen.add(a.address));
          return { addresses: unique, notFound: unique.length === 0 };
        },
        (err: unknown) => {
          const code = (err as { code?: string }).code;
          if (code && NOT_FOUND.has(code)) return { addresses: [], notFound: true };
          throw err;
        },
      )
      .then((r) => {
        const entry = { ...r, expires: this.now() + this.opts.ttlSeconds * 1000 };
        if (this.cache.size >= (this.opts.maxCacheEntries ?? 10_000)) {
          const oldest = this.cache.keys().next().value;
          if (oldest !== undefined) this.cache.delete(oldest);
        }
        this.cache.set(name, entry);
        return entry;
      })
      .finally(() => this.pending.delete(name));
    this.pending.set(name, p);
    return p;
  }

  private refused(session: SandboxIdentity, name: string, qtype: number): void {
    const key = `${session.namespace}/${session.name}/${name.toLowerCase()}`;
    const now = this.now();
    const last = this.refusals.get(key);
    if (last !== undefined && now - last < REFUSAL_DEDUPE_MS) return;
    if (this.refusals.size >= MAX_REFUSALS_KEPT) {
      for (const [k, t] of this.refusals) if (now - t >= REFUSAL_DEDUPE_MS) this.refusals.delete(k);
      if (this.refusals.size >= MAX_REFUSALS_KEPT) this.refusals.clear();
    }
    this.refusals.set(key, now);
    this.opts.onRefused({ session, name: name.slice(0, 253), qtype });
  }
}
