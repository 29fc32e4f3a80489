/**
 * The audit trail's vocabulary (issue 30, docs/adr/0034): what the gateway and the egress proxy
 * record about a session, the shape of a record, and the audit service's paths. The audit service
 * runs in the egress proxy's process; it alone appends, so each session's records form one
 * hash chain (each record's `hash` is an HMAC over the previous record's hash and its own
 * canonical JSON, keyed by a key derived from the master key under AUDIT_KEY_LABEL).
 */

/** What a record is about. */
export const AUDIT_KINDS = {
  /** A command run through exec or exec/stream (the gateway). */
  exec: 'exec',
  /** A file written through the files API (the gateway). */
  fileWrite: 'file.write',
  /** A background process started (the gateway). */
  processStart: 'process.start',
  /** A terminal opened (the gateway). */
  terminalOpen: 'terminal.open',
  /** A request through the port route (the gateway). */
  portRequest: 'port.request',
  /** A connection or request out of the sandbox, allowed or denied (the egress proxy). */
  egress: 'egress',
  /** The session's egress rules changed through the gateway. */
  egressRules: 'egress.rules',
} as const;

/** One of AUDIT_KINDS. */
export type AuditKind = (typeof AUDIT_KINDS)[keyof typeof AUDIT_KINDS];

/** What a writer sends: the service adds seq, prev and hash. */
export interface AuditEvent {
  /** RFC 3339 time of the action. */
  time: string;
  namespace: string;
  /** Session name. */
  session: string;
  kind: AuditKind;
  /** Who acted: an API key id (gateway), or the sandbox itself (egress). */
  actor: string;
  /** allowed / denied / ok / error: the outcome as the writer saw it. */
  outcome: string;
  /** Kind-specific facts (command, path, host, bytes...), plain JSON values only, never a secret. */
  detail: Record<string, string | number | boolean | null>;
}

/** A stored record: the event, its place in the session's chain and its chained HMAC. */
export interface AuditRecord extends AuditEvent {
  /** 1 for a session's first record, then +1. */
  seq: number;
  /** hash of the record before (AUDIT_GENESIS for the first). */
  prev: string;
  /** hex HMAC-SHA256 over `prev` + "\n" + the canonical JSON of the record without `hash`. */
  hash: string;
}

/** prev of a session's first record. */
export const AUDIT_GENESIS = '0'.repeat(64);

/** Label of the audit key derived from the master key (HMAC-SHA256(masterKey, label)). */
export const AUDIT_KEY_LABEL = 'sandbox.dev/audit-chain/v1';

/** Label of the bearer token writers and readers present to the audit service. */
export const AUDIT_CLIENT_LABEL = 'sandbox.dev/audit-client/v1';

/**
 * Label of the bearer token of the egress drop reporter (the node DaemonSet that turns the
 * NetworkPolicy enforcer's NFLOG drops into audit records, docs/egress.md). It is accepted on the
 * drops path only, and the client token is not accepted there.
 */
export const AUDIT_DROPS_LABEL = 'sandbox.dev/audit-drops/v1';

/** Most bytes of one detail string the service keeps (longer values are cut and marked). */
export const AUDIT_DETAIL_MAX_CHARS = 2048;

/** The audit service's paths (port: the egress proxy's audit port). */
export const AUDIT_PATHS = {
  /** POST {events: AuditEvent[]} -> 202 {appended}. */
  append: '/v1/audit/events',
  /** GET ?afterSeq&limit -> {records: AuditRecord[], nextSeq, lastSeq}. */
  records: (namespace: string, session: string): string =>
    `/v1/audit/sessions/${encodeURIComponent(namespace)}/${encodeURIComponent(session)}/records`,
  /** POST {drops: DroppedPacket[]} with the drop reporter's token -> 202 (egress-proxy/src/audit/drops.ts). */
  drops: '/v1/drops',
  /** GET -> AuditVerification. */
  verify: (namespace: string, session: string): string =>
    `/v1/audit/sessions/${encodeURIComponent(namespace)}/${encodeURIComponent(session)}/verify`,
} as const;

/** The verify call's answer. */
export interface AuditVerification {
  /** True when every stored record's hash and link is intact. */
  valid: boolean;
  /** Records checked. */
  records: number;
  firstSeq: number | null;
  lastSeq: number | null;
  /** seq of the first record that fails, when not valid. */
  brokenAt?: number;
  /** Why: hash-mismatch, link-mismatch, seq-gap, unparsable, head-missing. */
  reason?: string;
}
