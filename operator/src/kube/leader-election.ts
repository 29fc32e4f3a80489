/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics:
 *
 * - a candidate takes the Lease when it is free (no holder: released with an empty holder, or
 *   created with `spec: {}` by the Helm chart) or when the holder has not renewed it for
 *   leaseDuration, measured on the candidate's own clock from the moment it last saw the Lease
 *   change (so clock skew between replicas does not matter);
 * - every write is an optimistic-concurrency update (resourceVersion), so two candidates can never
 *   both win: the loser gets 409 and keeps waiting;
 * - the leader renews every retryPeriod and gives up when it could not renew for renewDeadline
 *   (< leaseDuration, so it stops before anyone else may start); after a failed renewal it tries
 *   again every 500 ms (at most retryPeriod) until the deadline, so an API server that comes back
 *   just before the deadline is not missed by up to a whole retryPeriod (the deadline itself, the
 *   safety margin, is unchanged: docs/adr/0022);
 * - on shutdown the leader releases the Lease (empty holder), so the standby takes over at once.
 */
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import { isConflict } from './errors.js';

/** Pause between renewal attempts after one failed (retryPeriod if that is shorter). */
const FAILED_RENEW_RETRY_MS = 500;

/** The Lease fields the election uses. */
export interface LeaseRecord {
  readonly holderIdentity?: string;
  readonly leaseDurationSeconds?: number;
  readonly acquireTime?: Date;
  readonly renewTime?: Date;
  readonly leaseTransitions?: number;
  readonly resourceVersion?: string;
  /**
   * Labels and annotations of the Lease object, carried over unchanged on every write: the Lease
   * may belong to a Helm release (its labels and meta.helm.sh annotations), and an update
   * replaces the whole object.
   */
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** Reads and writes the one Lease. create and update throw ConflictError on 409. */
export interface LeaseStore {
  get(): Promise<LeaseRecord | undefined>;
  create(record: LeaseRecord): Promise<LeaseRecord>;
  update(record: LeaseRecord): Promise<LeaseRecord>;
}

/** Election parameters. */
export interface LeaderElectorOptions {
  readonly store: LeaseStore;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

/** One candidate. */
export class LeaderElector {
  private observed?: { readonly record: LeaseRecord; readonly at: number };
  private leading = false;
  private lastRenew = 0;
  private readonly now: () => number;
  private readonly stop = new AbortController();

  constructor(private readonly opts: LeaderElectorOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** True while this candidate holds the Lease. */
  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * One attempt to acquire or renew: true when this candidate holds the Lease afterwards.
   * API errors propagate; a lost race (409) is just `false`.
   */
  async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.now();
    const current = await this.opts.store.get();
    if (!current) return this.write(() => this.opts.store.create(this.record(undefined, now)), now);
    this.observe(current, now);
    const holder = current.holderIdentity ?? '';
    if (holder !== '' && holder !== this.opts.identity && !this.expired(current, now)) return false;
    return this.write(() => this.opts.store.update(this.record(current, now)), now);
  }

  /** Blocks until this candidate holds the Lease (true) or stop() was called (false). */
  async acquire(): Promise<boolean> {
    // The attempt count tells "at once" (1: the Lease was free or released) from a wait for expiry.
    for (let attempts = 1; !this.stop.signal.aborted; attempts++) {
      if (await this.attempt()) {
        this.leading = true;
        this.lastRenew = this.now();
        this.opts.logger.info('acquired leader lease', { identity: this.opts.identity, attempts });
        return true;
      }
      await sleep(this.opts.retryPeriodMs * (1 + 0.2 * Math.random()), this.stop.signal);
    }
    return false;
  }

  /**
   * Renews every retryPeriod until stop() or until renewing failed for renewDeadline, then calls
   * onLost once. Resolves when the loop ends.
   */
  async keepRenewing(onLost: () => void): Promise<void> {
    let failed = false;
    while (this.leading && !this.stop.signal.aborted) {
      const pause = failed
        ? Math.min(this.opts.retryPeriodMs, FAILED_RENEW_RETRY_MS)
        : this.opts.retryPeriodMs;
      await sleep(pause, this.stop.signal);
      if (this.stop.signal.aborted) return;
      const remaining = this.lastRenew + this.opts.renewDeadlineMs - this.now();
      failed = true;
      if (remaining > 0 && (await withDeadline(this.attempt(), remaining))) {
        this.lastRenew = this.now();
        failed = false;
        continue;
      }
      if (this.now() - this.lastRenew >= this.opts.renewDeadlineMs) {
        this.leading = false;
        this.opts.logger.error('lost leader lease: could not renew it in time', {
          identity: this.opts.identity,
          renewDeadlineMs: this.opts.renewDeadlineMs,
        });
        onLost();
        return;
      }
    }
  }

  /** Stops acquiring and renewing; releases the Lease if held, so a standby takes over at once. */
  async release(): Promise<void> {
    this.stop.abort();
    if (!this.leading) return;
    this.leading = false;
    const current = await this.opts.store.get();
    if (!current || current.holderIdentity !== this.opts.identity) return;
    const now = new Date(this.now());
    await this.opts.store.update({
      ...current,
      holderIdentity: '',
      leaseDurationSeconds: 1,
      renewTime: now,
      acquireTime: now,
    });
    this.opts.logger.info('released leader lease', { identity: this.opts.identity });
  }

  private async attempt(): Promise<boolean> {
    try {
      return await this.tryAcquireOrRenew();
    } catch (err) {
      this.opts.logger.warn('leader lease attempt failed', {
        identity: this.opts.identity,
        ...errorFields(err),
      });
      return false;
    }
  }

  private async write(call: () => Promise<LeaseRecord>, now: number): Promise<boolean> {
    try {
      this.observe(await call(), now);
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  /** Remembers when the Lease last changed, on our clock. */
  private observe(record: LeaseRecord, now: number): void {
    if (!this.observed || this.observed.record.resourceVersion !== record.resourceVersion) {
      this.observed = { record, at: now };
    }
  }

  private expired(record: LeaseRecord, now: number): boolean {
    const durationMs = (record.leaseDurationSeconds ?? this.opts.leaseDurationMs / 1000) * 1000;
    return (this.observed?.at ?? now) + durationMs <= now;
  }

  private record(current: LeaseRecord | undefined, now: number): LeaseRecord {
    const mine = current?.holderIdentity === this.opts.identity;
    const at = new Date(now);
    return {
      resourceVersion: current?.resourceVersion,
      labels: current?.labels,
      annotations: current?.annotations,
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: Math.ceil(this.opts.leaseDurationMs / 1000),
      acquireTime: mine ? current?.acquireTime : at,
      renewTime: at,
      leaseTransitions: (current?.leaseTransitions ?? 0) + (current && !mine ? 1 : 0),
    };
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

async function withDeadline(attempt: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([attempt, late]);
  } finally {
    clearTimeout(timer);
  }
}
