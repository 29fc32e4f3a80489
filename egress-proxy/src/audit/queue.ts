/**
 * Batches the proxy's own audit events into the store (one append per tick), bounded: past
 * `maxPending` events waiting, new ones are counted as dropped and reported, never buffered
 * without limit (a sandbox opening connections in a loop must not grow the proxy's memory).
 */
import type { AuditEvent } from '@sandbox-platform/api';

/** Longest an event waits before its batch is appended, ms (one file append per batch). */
const FLUSH_DELAY_MS = 50;
/** A batch this large is appended at once. */
const FLUSH_EVENTS = 500;

/** A bounded batching queue in front of `append`. */
export class AuditQueue {
  private pending: AuditEvent[] = [];
  private scheduled = false;
  dropped = 0;

  constructor(
    private readonly append: (events: AuditEvent[]) => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
    private readonly maxPending = 10_000,
  ) {}

  push(event: AuditEvent): void {
    if (this.pending.length >= this.maxPending) {
      this.dropped++;
      return;
    }
    this.pending.push(event);
    if (this.pending.length >= FLUSH_EVENTS) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setTimeout(() => this.flush(), FLUSH_DELAY_MS);
    }
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) this.append(batch).catch(this.onError);
  }
}
