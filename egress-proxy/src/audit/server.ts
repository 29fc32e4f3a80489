/**
 * The audit service's HTTP API (its own port; only gateway pods and the drop reporters may
 * connect: NetworkPolicy): append events (the gateway), read a session's records and verify its chain (the gateway's
 * GET /v1/sessions/{name}/audit and .../audit/verify). Every call carries the bearer token
 * HMAC-SHA256(masterKey, AUDIT_CLIENT_LABEL), which the gateway derives itself. With the `drops`
 * option, POST /v1/drops takes the dropped packets of the nodes' drop reporters (drops.ts) with a
 * token of their own (AUDIT_DROPS_LABEL); neither token is accepted on the other's calls.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

import { AUDIT_KINDS, AUDIT_PATHS, type AuditEvent } from '@sandbox-platform/api';

import { DROPS_MAX_BYTES, dropEvents, parseDrops, type DropsOptions } from './drops.js';
import type { AuditStore } from './store.js';

/** Largest append body, bytes. */
export const APPEND_MAX_BYTES = 1024 * 1024;
/** Most events per append. */
export const APPEND_MAX_EVENTS = 1000;
/** Most records per read. */
export const READ_MAX_RECORDS = 1000;

const KINDS = new Set<string>(Object.values(AUDIT_KINDS));
const NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const RECORDS_RE = /^\/v1\/audit\/sessions\/([a-z0-9-]{1,63})\/([a-z0-9-]{1,63})\/(records|verify)$/;

const isName = (v: unknown): boolean => typeof v === 'string' && v.length <= 63 && NAME_RE.test(v);
const isText =
  (max: number) =>
  (v: unknown): boolean =>
    typeof v === 'string' && v.length <= max;
const isDetail = (v: unknown): boolean => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const values = Object.values(v);
  return (
    values.length <= 32 &&
    values.every((x) => x === null || ['string', 'number', 'boolean'].includes(typeof x))
  );
};

/** Each field of an event and its check. */
const EVENT_FIELDS: ReadonlyArray<[keyof AuditEvent, (v: unknown) => boolean]> = [
  ['namespace', isName],
  ['session', isName],
  ['kind', (v) => typeof v === 'string' && KINDS.has(v)],
  ['time', (v) => typeof v === 'string' && !Number.isNaN(Date.parse(v))],
  ['actor', isText(256)],
  ['outcome', isText(64)],
  ['detail', isDetail],
];

/** Why an event is refused (the first field at fault), or undefined when it is well formed. */
export function invalidEvent(e: unknown): string | undefined {
  if (typeof e !== 'object' || e === null) return 'not an object';
  return EVENT_FIELDS.find(([field, ok]) => !ok((e as Record<string, unknown>)[field]))?.[0];
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const problem = (res: ServerResponse, status: number, slug: string, detail: string): void =>
  send(res, status, { type: `https://sandbox.dev/problems/${slug}`, title: slug, status, detail });

async function readBody(req: IncomingMessage, max = APPEND_MAX_BYTES): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > max) return undefined;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Whether the request carries exactly this bearer token (compared in constant time). */
const bearer = (token: string): ((req: IncomingMessage) => boolean) => {
  const expected = Buffer.from(`Bearer ${token}`);
  return (req) => {
    const got = Buffer.from(req.headers.authorization ?? '');
    return got.length === expected.length && timingSafeEqual(got, expected);
  };
};

/** Options of the audit API. */
export interface AuditServerOptions {
  /** Serve POST /v1/drops (the nodes' drop reporters); without it the path is not served. */
  drops?: DropsOptions;
}

/** The audit API over `store`, accepting `token` (and the drop reporters' token on /v1/drops). */
export function auditServer(
  store: AuditStore,
  token: string,
  log: (msg: string, err: unknown) => void,
  options: AuditServerOptions = {},
): Server {
  const authorized = bearer(token);
  const drops = options.drops;
  const dropsAuthorized = drops ? bearer(drops.token) : undefined;
  const failed = (res: ServerResponse) => (err: unknown) => {
    log('audit request failed', err);
    if (!res.headersSent) problem(res, 500, 'internal', 'the audit store failed (see the egress proxy log)');
  };
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (drops && dropsAuthorized && path === AUDIT_PATHS.drops) {
      if (!dropsAuthorized(req))
        return problem(res, 401, 'unauthorized', 'a valid drop reporter token is required');
      if (req.method !== 'POST') return problem(res, 405, 'method-not-allowed', 'POST only');
      return void appendDrops(store, drops, req, res).catch(failed(res));
    }
    if (!authorized(req)) return problem(res, 401, 'unauthorized', 'a valid audit token is required');
    handle(store, req, res).catch(failed(res));
  });
}

async function appendDrops(
  store: AuditStore,
  opts: DropsOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await readBody(req, DROPS_MAX_BYTES);
  if (!body) return problem(res, 413, 'payload-too-large', `at most ${DROPS_MAX_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return problem(res, 400, 'invalid-request', 'the body is not JSON');
  }
  const drops = parseDrops(parsed);
  if (typeof drops === 'string') return problem(res, 400, 'invalid-request', drops);
  const { events, unknownSource, capped } = dropEvents(drops, opts.sessions, (opts.clock ?? Date.now)());
  const written = events.length > 0 ? await store.append(events) : [];
  return send(res, 202, { recorded: written.length, unknownSource, capped });
}

async function handle(store: AuditStore, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://audit');
  if (req.method === 'POST' && url.pathname === '/v1/audit/events') return append(store, req, res);
  const m = RECORDS_RE.exec(url.pathname);
  if (req.method !== 'GET' || !m) return problem(res, 404, 'not-found', 'no such audit call');
  const [, namespace, session, what] = m as unknown as [string, string, string, string];
  if (what === 'verify') return send(res, 200, await store.verify(namespace, session));
  return records(store, { namespace, session }, url.searchParams, res);
}

async function records(
  store: AuditStore,
  s: { namespace: string; session: string },
  query: URLSearchParams,
  res: ServerResponse,
): Promise<void> {
  const afterSeq = Number(query.get('afterSeq') ?? 0);
  const limit = Number(query.get('limit') ?? 100);
  const valid = Number.isInteger(afterSeq) && afterSeq >= 0 && Number.isInteger(limit);
  if (!valid || limit < 1 || limit > READ_MAX_RECORDS) {
    return problem(
      res,
      400,
      'invalid-request',
      `afterSeq must be an integer >= 0 and limit 1..${READ_MAX_RECORDS}`,
    );
  }
  const out = await store.records(s.namespace, s.session, afterSeq, limit);
  return send(res, 200, {
    records: out.records,
    lastSeq: out.lastSeq,
    nextSeq: out.records.at(-1)?.seq ?? afterSeq,
  });
}

async function append(store: AuditStore, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  if (!body) return problem(res, 413, 'payload-too-large', `at most ${APPEND_MAX_BYTES} bytes`);
  let events: unknown;
  try {
    events = (JSON.parse(body.toString('utf8')) as { events?: unknown }).events;
  } catch {
    return problem(res, 400, 'invalid-request', 'the body is not JSON');
  }
  if (!Array.isArray(events) || events.length > APPEND_MAX_EVENTS) {
    return problem(res, 400, 'invalid-request', `events must be an array of at most ${APPEND_MAX_EVENTS}`);
  }
  const bad = events.map(invalidEvent).findIndex((r) => r !== undefined);
  if (bad >= 0)
    return problem(res, 400, 'invalid-request', `events[${bad}]: invalid ${invalidEvent(events[bad])}`);
  const written = await store.append(events as AuditEvent[]);
  return send(res, 202, { appended: written.length });
}
