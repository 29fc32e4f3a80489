/**
 * Sends dropped packets to the egress proxy's audit service (POST /v1/drops with the drop
 * reporter's bearer token, AUDIT_DROPS_LABEL): batched (every `batchMs`, or at once when
 * `batchMax` wait), one request at a time, bounded. Past `queueMax` waiting drops new ones are
 * counted and dropped; a batch the service could not take (unreachable, 5xx, 401) is put back and
 * retried with backoff, and a drop older than DROP_MAX_AGE_MS is given up (counted). A batch the
 * service refuses as invalid (400, 413) is counted, logged and not retried. Nothing is dropped
 * without a counter: main.ts logs the counters.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

import { AUDIT_PATHS } from '@sandbox-platform/api';

import { DROP_MAX_AGE_MS, type DroppedPacket, type WireDrop } from './drop.js';
import type { ReaderLog } from './reader.js';

/** What the service answers to a batch (audit/drops.ts). */
export interface DropsAnswer {
  /** Audit records appended. */
  recorded: number;
  /** Drops whose source address is no sandbox session's. */
  unknownSource: number;
  /** Drops over the per-session cap of one batch. */
  capped: number;
}

/** The outcome of sending one batch. */
export type SendResult = { ok: true; answer: DropsAnswer } | { ok: false; retry: boolean; reason: string };

/** Sends one batch. */
export type DropSender = (drops: WireDrop[]) => Promise<SendResult>;

/** Largest answer read from the service, bytes. */
const ANSWER_MAX_BYTES = 4096;

const count = (v: unknown): number => (Number.isInteger(v) && (v as number) >= 0 ? (v as number) : 0);

/** A sender over HTTP(S) to `<auditUrl>/v1/drops`. */
export function httpDropSender(opts: { auditUrl: string; token: string; timeoutMs?: number }): DropSender {
  const url = new URL(AUDIT_PATHS.drops, opts.auditUrl);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return (drops) =>
    new Promise<SendResult>((resolve) => {
      const body = JSON.stringify({ drops });
      const req = request(url, {
        method: 'POST',
        timeout: opts.timeoutMs ?? 10_000,
        headers: {
          authorization: `Bearer ${opts.token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (err) => resolve({ ok: false, retry: true, reason: String(err) }));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= ANSWER_MAX_BYTES) chunks.push(c);
        });
        res.on('error', (err) => resolve({ ok: false, retry: true, reason: String(err) }));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8').slice(0, 512);
          const status = res.statusCode ?? 0;
          if (status === 400 || status === 413) {
            return resolve({ ok: false, retry: false, reason: `HTTP ${status}: ${text}` });
          }
          if (status !== 202) return resolve({ ok: false, retry: true, reason: `HTTP ${status}: ${text}` });
          let a: Record<string, unknown> = {};
          try {
            a = JSON.parse(text) as Record<string, unknown>;
          } catch {
            return resolve({ ok: false, retry: false, reason: 'the answer is not JSON' });
          }
          resolve({
            ok: true,
            answer: {
              recorded: count(a.recorded),
              unknownSource: count(a.unknownSource),
              capped: count(a.capped),
            },
          });
        });
      });
      req.end(body);
    });
}

export interface DropReporterOptions {
  send: DropSender;
  log: ReaderLog;
  /** Longest a drop waits for its batch, ms (default 1,000). */
  batchMs?: number;
  /** Most drops per request; this many waiting are sent at once (default 100). */
  batchMax?: number;
  /** Most drops waiting; more are counted in queueFull (default 1,000). */
  queueMax?: number;
  /** Longest retry delay after failed sends, ms (default 30,000). */
  retryMaxMs?: number;
  clock?: () => number;
}

/** Counters since the reporter started. */
export interface ReporterStats extends DropsAnswer {
  /** Drops sent in batches the service took. */
  sent: number;
  /** Drops not queued: the queue was full. */
  queueFull: number;
  /** Drops given up after DROP_MAX_AGE_MS of failed sends. */
  expired: number;
  /** Drops in batches the service refused as invalid. */
  rejected: number;
  /** Failed sends (each retried). */
  failures: number;
}

/** Batches drops into requests to the audit service. */
export class DropReporter {
  readonly stats: ReporterStats = {
    sent: 0,
    recorded: 0,
    unknownSource: 0,
    capped: 0,
    queueFull: 0,
    expired: 0,
    rejected: 0,
    failures: 0,
  };
  private queue: Array<{ drop: DroppedPacket; at: number }> = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private failuresInRow = 0;
  private readonly batchMs: number;
  private readonly batchMax: number;
  private readonly queueMax: number;
  private readonly now: () => number;

  constructor(private readonly opts: DropReporterOptions) {
    this.batchMs = opts.batchMs ?? 1000;
    this.batchMax = opts.batchMax ?? 100;
    this.queueMax = opts.queueMax ?? 1000;
    this.now = opts.clock ?? Date.now;
  }

  /** Drops waiting to be sent. */
  get pending(): number {
    return this.queue.length;
  }

  push(drop: DroppedPacket): void {
    if (this.queue.length >= this.queueMax) {
      this.stats.queueFull++;
      return;
    }
    this.queue.push({ drop, at: this.now() });
    if (this.sending) return;
    if (this.queue.length >= this.batchMax) this.kick();
    else this.timer ??= setTimeout(() => this.kick(), this.batchMs);
  }

  /** Sends what waits now (one batch), and waits for a send under way. */
  async flush(): Promise<void> {
    if (this.sending) await this.sending;
    if (this.queue.length > 0) this.kick();
    if (this.sending) await this.sending;
  }

  /** Stops the timer; what waits stays unsent (call flush first to send it). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private kick(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.sending) return;
    this.sending = this.sendBatch().finally(() => {
      this.sending = undefined;
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.queue.length === 0 || this.timer) return;
    const delay =
      this.failuresInRow > 0
        ? Math.min(this.batchMs * 2 ** this.failuresInRow, this.opts.retryMaxMs ?? 30_000)
        : this.queue.length >= this.batchMax
          ? 0
          : this.batchMs;
    this.timer = setTimeout(() => this.kick(), delay);
  }

  private async sendBatch(): Promise<void> {
    const now = this.now();
    const taken = this.queue.splice(0, this.batchMax);
    const batch = taken.filter((q) => now - q.at <= DROP_MAX_AGE_MS);
    this.stats.expired += taken.length - batch.length;
    if (batch.length === 0) return;
    const wire = batch.map((q) => ({ ...q.drop, ageMs: Math.max(0, now - q.at) }));
    let result: SendResult;
    try {
      result = await this.opts.send(wire);
    } catch (err) {
      result = { ok: false, retry: true, reason: String(err) };
    }
    if (result.ok) {
      this.failuresInRow = 0;
      this.stats.sent += batch.length;
      this.stats.recorded += result.answer.recorded;
      this.stats.unknownSource += result.answer.unknownSource;
      this.stats.capped += result.answer.capped;
      return;
    }
    if (!result.retry) {
      this.failuresInRow = 0;
      this.stats.rejected += batch.length;
      this.opts.log.error('drops refused by the audit service', {
        drops: batch.length,
        reason: result.reason,
      });
      return;
    }
    this.failuresInRow++;
    this.stats.failures++;
    this.queue.unshift(...batch);
    const over = this.queue.length - this.queueMax;
    if (over > 0) {
      this.queue.splice(this.queueMax, over);
      this.stats.queueFull += over;
    }
    this.opts.log.warn('sending drops failed; retrying', {
      drops: batch.length,
      reason: result.reason,
      failuresInRow: this.failuresInRow,
    });
  }
}
