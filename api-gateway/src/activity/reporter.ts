/**
 * Activity reporting: the gateway merge-patches the sandbox.dev/last-activity annotation so the
 * operator does not idle-collect a session in use. Per session at most one patch per interval
 * (the configured throttle, and never more than a third of the session's idle timeout, so a
 * session is reported at least three times per idle period while busy); a call inside the
 * interval schedules one trailing patch at its end so the last activity is never lost; a running
 * exec keeps a heartbeat going. Patches run off the request path: nothing awaits them, and a
 * failure is logged once here, never thrown.
 */
import type { FastifyBaseLogger } from 'fastify';

import type { ActivityPatcher } from '../sessions/store.js';
import type { TraceContext } from '../tracing/tracing-config.js';

/** The session an activity is about. */
export interface ActivitySubject {
  namespace: string;
  name: string;
  /** spec.idleTimeoutSeconds; 0 means never idle-collected. */
  idleTimeoutSeconds: number;
  /** Tracing on: the reporting request's trace context; the patch's span is its child. */
  trace?: TraceContext;
}

/** What routes call; fire-and-forget. */
export interface ActivityReporter {
  /** Records activity now (throttled). */
  touch(s: ActivitySubject): void;
  /** Starts a heartbeat for a long call; the returned function stops it and records the end. */
  begin(s: ActivitySubject): () => void;
}

/** Clock and timers, injectable for tests. */
export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): NodeJS.Timeout;
  clearTimeout(t: NodeJS.Timeout): void;
}

const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (t) => clearTimeout(t),
};

interface Entry {
  lastPatchAt: number;
  trailing: NodeJS.Timeout | undefined;
  heartbeats: number;
  heartbeat: NodeJS.Timeout | undefined;
  /** Removes the entry once its throttle window closed with nothing pending. */
  expiry: NodeJS.Timeout | undefined;
  subject: ActivitySubject;
}

/** Counts of patch outcomes, for metrics. */
export type PatchOutcome = 'ok' | 'error' | 'gone';

/** Options of the throttled reporter. */
export interface ThrottledReporterOptions {
  patcher: ActivityPatcher;
  throttleMs: number;
  log: Pick<FastifyBaseLogger, 'warn' | 'debug'>;
  timers?: Timers;
  onPatch?: (outcome: PatchOutcome) => void;
}

/** The per-session throttled reporter. */
export class ThrottledActivityReporter implements ActivityReporter {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers: Timers;
  private closed = false;

  constructor(private readonly o: ThrottledReporterOptions) {
    this.timers = o.timers ?? realTimers;
  }

  /** Interval of one session: the throttle, capped at a third of its idle timeout. */
  intervalMs(s: ActivitySubject): number {
    if (s.idleTimeoutSeconds <= 0) return this.o.throttleMs;
    return Math.max(1000, Math.min(this.o.throttleMs, Math.floor((s.idleTimeoutSeconds * 1000) / 3)));
  }

  touch(s: ActivitySubject): void {
    if (this.closed) return;
    const e = this.entry(s);
    const now = this.timers.now();
    const due = e.lastPatchAt + this.intervalMs(s);
    if (now >= due) {
      this.patchNow(e);
      return;
    }
    if (!e.trailing) {
      e.trailing = this.timers.setTimeout(() => {
        e.trailing = undefined;
        this.patchNow(e);
      }, due - now);
    }
  }

  begin(s: ActivitySubject): () => void {
    this.touch(s);
    const e = this.entry(s);
    e.heartbeats++;
    if (e.heartbeats === 1) this.scheduleHeartbeat(e);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      e.heartbeats--;
      if (e.heartbeats === 0 && e.heartbeat) {
        this.timers.clearTimeout(e.heartbeat);
        e.heartbeat = undefined;
      }
      this.touch(s);
    };
  }

  /** Sends every pending trailing patch now and waits for in-flight patches (shutdown). */
  async flush(): Promise<void> {
    this.closed = true;
    for (const e of this.entries.values()) {
      if (e.heartbeat) this.timers.clearTimeout(e.heartbeat);
      if (e.expiry) this.timers.clearTimeout(e.expiry);
      if (e.trailing) {
        this.timers.clearTimeout(e.trailing);
        e.trailing = undefined;
        this.patchNow(e, true);
      }
    }
    await Promise.allSettled([...this.inFlight]);
  }

  /** Number of sessions tracked (tests). */
  get tracked(): number {
    return this.entries.size;
  }

  private entry(s: ActivitySubject): Entry {
    const key = `${s.namespace}/${s.name}`;
    let e = this.entries.get(key);
    if (!e) {
      e = {
        lastPatchAt: -Infinity,
        trailing: undefined,
        heartbeats: 0,
        heartbeat: undefined,
        expiry: undefined,
        subject: s,
      };
      this.entries.set(key, e);
    }
    if (e.expiry) {
      this.timers.clearTimeout(e.expiry);
      e.expiry = undefined;
    }
    e.subject = s;
    return e;
  }

  private scheduleHeartbeat(e: Entry): void {
    e.heartbeat = this.timers.setTimeout(() => {
      e.heartbeat = undefined;
      if (e.heartbeats === 0 || this.closed) return;
      this.touch(e.subject);
      this.scheduleHeartbeat(e);
    }, this.intervalMs(e.subject));
  }

  private patchNow(e: Entry, force = false): void {
    if (this.closed && !force) return;
    const { namespace, name } = e.subject;
    e.lastPatchAt = this.timers.now();
    const p = this.o.patcher
      .patchLastActivity(namespace, name, new Date(e.lastPatchAt), e.subject.trace)
      .then(
        () => this.o.onPatch?.('ok'),
        (err: unknown) => this.onFailure(e, err),
      )
      .finally(() => {
        this.inFlight.delete(p);
        this.forgetIfIdle(e);
      });
    this.inFlight.add(p);
  }

  private onFailure(e: Entry, err: unknown): void {
    const { namespace, name } = e.subject;
    if ((err as { code?: unknown }).code === 404) {
      // Deleted meanwhile: nothing to report on any more.
      this.o.onPatch?.('gone');
      this.o.log.debug({ namespace, session: name }, 'activity patch: session is gone');
      return;
    }
    this.o.onPatch?.('error');
    this.o.log.warn({ namespace, session: name, err }, 'activity patch failed');
  }

  /** Drops a session's entry once nothing is pending; the throttle window is then over anyway. */
  private forgetIfIdle(e: Entry): void {
    if (e.trailing || e.heartbeats > 0 || e.expiry || this.closed) return;
    const key = `${e.subject.namespace}/${e.subject.name}`;
    const interval = this.intervalMs(e.subject);
    // Keep the entry until its window closes so a burst of calls stays throttled.
    e.expiry = this.timers.setTimeout(
      () => {
        e.expiry = undefined;
        if (!e.trailing && e.heartbeats === 0 && this.entries.get(key) === e) this.entries.delete(key);
      },
      Math.max(0, e.lastPatchAt + interval - this.timers.now()),
    );
  }
}
