/**
 * POST /v1/drops of the audit service: packets the NetworkPolicy enforcer dropped on a node, sent
 * by that node's drop reporter (egress-proxy/src/drops/), become `egress` records (outcome denied,
 * reason `direct`) of the session whose sandbox Pod sent them, found by source address like the
 * proxy finds a connection's session. A drop from an address that is no session's (another Pod,
 * or traffic dropped on its way *to* a Pod) is counted and ignored. Bounded: body size, drops per
 * call, records per session per call; the enforcer itself logs at most 10 packets a minute per
 * Pod (kube-router's NFLOG limit). docs/egress.md, "Direct connections in the audit".
 */
import { AUDIT_KINDS, type AuditEvent } from '@sandbox-platform/api';

import { checkWireDrop, type WireDrop } from '../drops/drop.js';
import type { SessionResolver } from '../sessions.js';

/** Largest drops body, bytes (a drop is about 120 bytes of JSON). */
export const DROPS_MAX_BYTES = 128 * 1024;
/** Most drops per call. */
export const DROPS_MAX_COUNT = 500;
/** Most records one call appends per session; the rest are counted as capped. */
export const DROPS_MAX_PER_SESSION = 20;

/** What POST /v1/drops needs (auditServer's `drops` option). */
export interface DropsOptions {
  /** The drop reporter's bearer token: hex HMAC-SHA256(masterKey, AUDIT_DROPS_LABEL). */
  token: string;
  /** Sessions by sandbox Pod address (the proxy's session index). */
  sessions: Pick<SessionResolver, 'byAddress'>;
  /** ms since the epoch (tests). */
  clock?: () => number;
}

/** The drops of a body, or why the body is refused. */
export function parseDrops(body: unknown): WireDrop[] | string {
  const drops = typeof body === 'object' && body !== null ? (body as { drops?: unknown }).drops : undefined;
  if (!Array.isArray(drops) || drops.length > DROPS_MAX_COUNT) {
    return `drops must be an array of at most ${DROPS_MAX_COUNT}`;
  }
  const out: WireDrop[] = [];
  for (const [i, d] of drops.entries()) {
    const drop = checkWireDrop(d);
    if (typeof drop === 'string') return `drops[${i}]: invalid ${drop}`;
    out.push(drop);
  }
  return out;
}

/** The audit events of `drops`, and what was left out. */
export function dropEvents(
  drops: readonly WireDrop[],
  sessions: DropsOptions['sessions'],
  now: number,
): { events: AuditEvent[]; unknownSource: number; capped: number } {
  const events: AuditEvent[] = [];
  const perSession = new Map<string, number>();
  let unknownSource = 0;
  let capped = 0;
  for (const d of drops) {
    const session = sessions.byAddress(d.src);
    if (!session) {
      unknownSource++;
      continue;
    }
    const key = `${session.namespace}/${session.name}`;
    const n = perSession.get(key) ?? 0;
    if (n >= DROPS_MAX_PER_SESSION) {
      capped++;
      continue;
    }
    perSession.set(key, n + 1);
    events.push({
      time: new Date(now - d.ageMs).toISOString(),
      namespace: session.namespace,
      session: session.name,
      kind: AUDIT_KINDS.egress,
      actor: 'sandbox',
      outcome: 'denied',
      detail: {
        host: d.dst,
        port: d.dport ?? null,
        scheme: 'direct',
        proto: d.proto,
        reason: 'direct',
        sourcePort: d.sport ?? null,
      },
    });
  }
  return { events, unknownSource, capped };
}
