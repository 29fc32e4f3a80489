/**
 * The gateway's side of the audit trail: events are queued and sent in batches to the egress
 * proxy's audit service (the one writer of each session's hash chain); reads and verify are
 * passed through. The bearer token is derived from the master key (AUDIT_CLIENT_LABEL), so the
 * service needs no secret of its own for its callers.
 *
 * Sending never delays or fails the request being audited: a batch that cannot be delivered is
 * retried once, then counted as lost and logged (the lost count is also exported to the log once
 * per flush). The queue is bounded.
 */
import { createHmac } from 'node:crypto';

import {
  AUDIT_CLIENT_LABEL,
  AUDIT_PATHS,
  type AuditEvent,
  type AuditRecord,
  type AuditVerification,
} from '@sandbox-platform/api';

import { ProblemError } from '../errors.js';

/** What routes and hooks need. */
export interface AuditSink {
  record(event: AuditEvent): void;
  records(
    namespace: string,
    session: string,
    q: { afterSeq: number; limit: number },
  ): Promise<{ records: AuditRecord[]; lastSeq: number | null; nextSeq: number }>;
  verify(namespace: string, session: string): Promise<AuditVerification>;
}

/** Options of the client. */
export interface AuditClientOptions {
  url: string;
  masterKey: Buffer;
  log: { warn(obj: object, msg: string): void };
  /** Most events waiting to be sent. */
  maxPending?: number;
  /** Deadline of one call, ms. */
  timeoutMs?: number;
}

/** The HTTP client of the audit service. */
export class AuditClient implements AuditSink {
  private pending: AuditEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly auth: string;

  constructor(private readonly opts: AuditClientOptions) {
    this.auth = `Bearer ${createHmac('sha256', opts.masterKey).update(AUDIT_CLIENT_LABEL).digest('hex')}`;
  }

  record(event: AuditEvent): void {
    if (this.pending.length >= (this.opts.maxPending ?? 10_000)) {
      this.opts.log.warn({ kind: event.kind, session: event.session }, 'audit queue full; event lost');
      return;
    }
    this.pending.push(event);
    this.timer ??= setTimeout(() => void this.flush(), 20);
  }

  /** Sends what is queued (also on shutdown). */
  async flush(): Promise<void> {
    this.timer = undefined;
    const batch = this.pending.splice(0, 1000);
    if (batch.length === 0) return;
    if (this.pending.length > 0) this.timer = setTimeout(() => void this.flush(), 0);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.call('POST', AUDIT_PATHS.append, { events: batch });
        return;
      } catch (err) {
        if (attempt === 1) this.opts.log.warn({ err, lost: batch.length }, 'audit events could not be sent');
      }
    }
  }

  records(
    namespace: string,
    session: string,
    q: { afterSeq: number; limit: number },
  ): Promise<{ records: AuditRecord[]; lastSeq: number | null; nextSeq: number }> {
    const query = `?afterSeq=${q.afterSeq}&limit=${q.limit}`;
    return this.call('GET', AUDIT_PATHS.records(namespace, session) + query) as never;
  }

  verify(namespace: string, session: string): Promise<AuditVerification> {
    return this.call('GET', AUDIT_PATHS.verify(namespace, session)) as never;
  }

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(this.opts.url + path, {
        method,
        headers: { authorization: this.auth, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000),
      });
    } catch (err) {
      throw new ProblemError('upstream-error', 'the audit service could not be reached', { cause: err });
    }
    const text = await res.text();
    if (!res.ok) {
      throw new ProblemError('upstream-error', `the audit service answered ${res.status}`);
    }
    return JSON.parse(text) as unknown;
  }
}
