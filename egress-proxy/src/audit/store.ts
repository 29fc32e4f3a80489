/**
 * The audit store: one JSON-lines file per session (`<dir>/<namespace>/<session>.jsonl`) and,
 * once retention dropped its oldest records, an anchor file (`.anchor.json`: the seq and hash of
 * the last dropped record) from which the kept records chain. Appends to a session are
 * serialized (one promise chain per session), so its records form one chain; the chain's head
 * is also kept in memory, so a record cut off the end of the file is detected by verify.
 *
 * Reads and verify read the file, never the memory: what is checked is what is stored.
 */
import { mkdir, readFile, readdir, rename, rm, writeFile, appendFile } from 'node:fs/promises';
import { join } from 'node:path';

import {
  AUDIT_GENESIS,
  type AuditEvent,
  type AuditRecord,
  type AuditVerification,
} from '@sandbox-platform/api';

import { chainRecord, verifyChain } from './chain.js';

/** Options of the store (composition root: main.ts). */
export interface AuditStoreOptions {
  /** Directory of the files (a volume). */
  dir: string;
  /** HMAC key of the chains (derived from the master key). */
  key: Buffer;
  /** Records older than this are dropped by `sweep`. */
  retentionSeconds: number;
  /** Most records kept per session; the oldest beyond it are dropped by `sweep`. */
  maxRecordsPerSession: number;
  /** Called with every appended record (the OpenTelemetry export). */
  onRecord?: (record: AuditRecord) => void;
  now?: () => number;
}

interface Head {
  seq: number;
  hash: string;
}

const NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Throws on a namespace or session name that is not a DNS label (they become file names). */
function checkName(value: string, what: string): void {
  if (value.length > 63 || !NAME_RE.test(value))
    throw new Error(`audit: invalid ${what} ${JSON.stringify(value)}`);
}

/** Per-session append-only chains on disk. */
export class AuditStore {
  private readonly heads = new Map<string, Head>();
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Namespace directories made by this store (one mkdir each, not one per append). */
  private readonly dirs = new Set<string>();

  constructor(private readonly opts: AuditStoreOptions) {}

  private paths(namespace: string, session: string): { dir: string; log: string; anchor: string } {
    checkName(namespace, 'namespace');
    checkName(session, 'session');
    const dir = join(this.opts.dir, namespace);
    return { dir, log: join(dir, `${session}.jsonl`), anchor: join(dir, `${session}.anchor.json`) };
  }

  /** Runs `fn` after every earlier operation on the same session. */
  private serial<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const before = this.queues.get(id) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const settled = run.catch(() => undefined);
    this.queues.set(id, settled);
    void settled.then(() => {
      if (this.queues.get(id) === settled) this.queues.delete(id);
    });
    return run;
  }

  /** Appends events of one session, in order. Returns the records written. */
  append(events: readonly AuditEvent[]): Promise<AuditRecord[]> {
    const bySession = new Map<string, AuditEvent[]>();
    for (const e of events) {
      const id = `${e.namespace}/${e.session}`;
      const list = bySession.get(id);
      if (list) list.push(e);
      else bySession.set(id, [e]);
    }
    return Promise.all(
      [...bySession].map(([id, list]) => this.serial(id, () => this.appendSession(id, list))),
    ).then((all) => all.flat());
  }

  private async appendSession(id: string, events: AuditEvent[]): Promise<AuditRecord[]> {
    const first = events[0]!;
    const p = this.paths(first.namespace, first.session);
    let head = this.heads.get(id) ?? (await this.loadHead(p));
    const records: AuditRecord[] = [];
    for (const e of events) {
      const r = chainRecord(this.opts.key, e, head);
      records.push(r);
      head = { seq: r.seq, hash: r.hash };
    }
    await this.appendLines(p, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
    this.heads.set(id, head);
    for (const r of records) this.opts.onRecord?.(r);
    return records;
  }

  /** Appends to a session's log; its directory is made once (and again if it went away). */
  private async appendLines(p: { dir: string; log: string }, text: string): Promise<void> {
    if (!this.dirs.has(p.dir)) {
      await mkdir(p.dir, { recursive: true });
      this.dirs.add(p.dir);
    }
    try {
      await appendFile(p.log, text, { mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await mkdir(p.dir, { recursive: true });
      await appendFile(p.log, text, { mode: 0o600 });
    }
  }

  /** The head from the file's last record, else the anchor, else the genesis. */
  private async loadHead(p: { log: string; anchor: string }): Promise<Head> {
    const lines = await readLines(p.log);
    for (let i = lines.length - 1; i >= 0; i--) {
      const r = parse(lines[i]!);
      if (r) return { seq: r.seq, hash: r.hash };
    }
    return this.loadAnchor(p.anchor);
  }

  private async loadAnchor(path: string): Promise<Head> {
    try {
      const a = JSON.parse(await readFile(path, 'utf8')) as Head;
      return { seq: a.seq, hash: a.hash };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { seq: 0, hash: AUDIT_GENESIS };
      throw new Error(`audit: anchor ${path} unreadable`, { cause: err });
    }
  }

  /** Records of a session with seq > afterSeq, at most `limit`. */
  async records(
    namespace: string,
    session: string,
    afterSeq: number,
    limit: number,
  ): Promise<{ records: AuditRecord[]; lastSeq: number | null }> {
    const p = this.paths(namespace, session);
    const all = (await readLines(p.log)).map(parse).filter((r): r is AuditRecord => r !== undefined);
    return { records: all.filter((r) => r.seq > afterSeq).slice(0, limit), lastSeq: all.at(-1)?.seq ?? null };
  }

  /** Checks the stored chain of a session (see chain.ts verifyChain). */
  async verify(namespace: string, session: string): Promise<AuditVerification> {
    const id = `${namespace}/${session}`;
    const p = this.paths(namespace, session);
    return this.serial(id, async () => {
      const lines = await readLines(p.log);
      const anchor = await this.loadAnchor(p.anchor);
      return verifyChain(this.opts.key, lines.map(parse), anchor, this.heads.get(id));
    });
  }

  /** Drops records past retention (age or count) from every session, keeping each chain anchored. */
  async sweep(): Promise<{ dropped: number }> {
    let dropped = 0;
    const namespaces = await readdir(this.opts.dir).catch(() => [] as string[]);
    for (const ns of namespaces) {
      const files = await readdir(join(this.opts.dir, ns)).catch(() => [] as string[]);
      for (const f of files.filter((n) => n.endsWith('.jsonl'))) {
        const session = f.slice(0, -'.jsonl'.length);
        if (!NAME_RE.test(ns) || !NAME_RE.test(session)) continue;
        dropped += await this.serial(`${ns}/${session}`, () => this.trim(ns, session));
      }
    }
    return { dropped };
  }

  private async trim(namespace: string, session: string): Promise<number> {
    const p = this.paths(namespace, session);
    const lines = await readLines(p.log);
    const cutoff = (this.opts.now ?? Date.now)() - this.opts.retentionSeconds * 1000;
    let drop = 0;
    while (drop < lines.length) {
      const r = parse(lines[drop]!);
      const old = r !== undefined && Date.parse(r.time) < cutoff;
      if (!old && lines.length - drop <= this.opts.maxRecordsPerSession) break;
      if (r === undefined) break; // never drop what cannot be read: verify must report it
      drop++;
    }
    if (drop === 0) return 0;
    const last = parse(lines[drop - 1]!)!;
    const kept = lines.slice(drop);
    await writeFile(`${p.anchor}.tmp`, JSON.stringify({ seq: last.seq, hash: last.hash }), { mode: 0o600 });
    await rename(`${p.anchor}.tmp`, p.anchor);
    if (kept.length === 0) {
      await rm(p.log, { force: true });
    } else {
      await writeFile(`${p.log}.tmp`, kept.map((l) => `${l}\n`).join(''), { mode: 0o600 });
      await rename(`${p.log}.tmp`, p.log);
    }
    return drop;
  }
}

async function readLines(path: string): Promise<string[]> {
  try {
    return (await readFile(path, 'utf8')).split('\n').filter((l) => l.length > 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new Error(`audit: ${path} unreadable`, { cause: err });
  }
}

function parse(line: string): AuditRecord | undefined {
  try {
    const r = JSON.parse(line) as AuditRecord;
    return typeof r === 'object' && r !== null && typeof r.seq === 'number' && typeof r.hash === 'string'
      ? r
      : undefined;
  } catch {
    return undefined;
  }
}
