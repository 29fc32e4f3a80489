/**
 * Egress rules and the audit trail (docs/egress.md): the calls behind SandboxClient.getEgress,
 * setEgress, auditRecords and verifyAudit. Kept apart from client.ts, which delegates here with
 * its own request function (code.ts's Caller).
 */
import type { Caller } from './code.js';
import { readJson } from './http.js';

/** One egress rule of a session (spec.egress.rules). */
export interface EgressRule {
  /** A lowercase host name, or `*.suffix`. */
  host: string;
  /** Ports; unset means 80 and 443. */
  ports?: number[];
  /** Only these methods (plain HTTP, or HTTPS the proxy intercepts). */
  methods?: Array<'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS'>;
  /** Only paths starting with one of these. */
  pathPrefixes?: string[];
  /** Headers the proxy adds, each from a key of a Secret of the session's namespace. */
  injectHeaders?: Array<{ name: string; secretKeyRef: { name: string; key: string } }>;
}

/** A session's egress rules (spec.egress). */
export interface Egress {
  rules?: EgressRule[];
  /** Also the namespace defaults (default true). */
  inheritNamespaceDefaults?: boolean;
}

/** One audit record of a session. */
export interface AuditRecord {
  seq: number;
  time: string;
  namespace: string;
  session: string;
  /** exec, file.write, process.start, terminal.open, port.request, egress, egress.rules */
  kind: string;
  actor: string;
  /** ok, error, denied, allowed, requested */
  outcome: string;
  detail: Record<string, string | number | boolean | null>;
  prev: string;
  hash: string;
}

/** A page of audit records. */
export interface AuditPage {
  records: AuditRecord[];
  lastSeq: number | null;
  /** afterSeq of the next page. */
  nextSeq: number;
}

/** The verify call's answer. */
export interface AuditVerification {
  valid: boolean;
  records: number;
  firstSeq: number | null;
  lastSeq: number | null;
  brokenAt?: number;
  /** hash-mismatch, link-mismatch, seq-gap, unparsable, head-missing */
  reason?: string;
}

type Opts = Parameters<Caller['call']>[0];
const seg = encodeURIComponent;

/** A session's egress rules. */
export async function getEgress(c: Caller, name: string, opts: Opts): Promise<Egress> {
  const ok = await c.call(opts, {
    method: 'GET',
    path: `/v1/sessions/${seg(name)}/egress`,
    idempotent: true,
  });
  return (await readJson<{ egress: Egress }>(ok, c.maxBytes)).egress;
}

/** Replaces a session's egress rules (idempotent: the same body twice gives the same rules). */
export async function setEgress(c: Caller, name: string, egress: Egress, opts: Opts): Promise<Egress> {
  const ok = await c.call(opts, {
    method: 'PUT',
    path: `/v1/sessions/${seg(name)}/egress`,
    body: { data: JSON.stringify(egress), contentType: 'application/json' },
    idempotent: true,
  });
  return (await readJson<{ egress: Egress }>(ok, c.maxBytes)).egress;
}

/** One page of a session's audit records (oldest first, seq > afterSeq). */
export async function auditRecords(
  c: Caller,
  name: string,
  page: { afterSeq?: number; limit?: number },
  opts: Opts,
): Promise<AuditPage> {
  const q = `?afterSeq=${page.afterSeq ?? 0}&limit=${page.limit ?? 100}`;
  const ok = await c.call(opts, {
    method: 'GET',
    path: `/v1/sessions/${seg(name)}/audit${q}`,
    idempotent: true,
  });
  return readJson<AuditPage>(ok, c.maxBytes);
}

/** Recomputes the session's audit hash chain on the server. */
export async function verifyAudit(c: Caller, name: string, opts: Opts): Promise<AuditVerification> {
  const ok = await c.call(opts, {
    method: 'GET',
    path: `/v1/sessions/${seg(name)}/audit/verify`,
    idempotent: true,
  });
  return readJson<AuditVerification>(ok, c.maxBytes);
}
