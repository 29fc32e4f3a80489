import { describe, expect, it } from '@jest/globals';

import { ThrottledActivityReporter, type Timers } from '../../../src/activity/reporter.js';
import type { ActivityPatcher } from '../../../src/sessions/store.js';

/** A manual clock: advance() fires due timers in order. */
class ManualTimers implements Timers {
  private t = 0;
  private seq = 0;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): NodeJS.Timeout {
    const id = ++this.seq;
    this.pending.set(id, { at: this.t + ms, fn });
    return id as unknown as NodeJS.Timeout;
  }
  clearTimeout(t: NodeJS.Timeout): void {
    this.pending.delete(t as unknown as number);
  }
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      const next = [...this.pending.entries()]
        .filter(([, v]) => v.at <= end)
        .sort((a, b) => a[1].at - b[1].at)[0];
      if (!next) break;
      this.pending.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
      await Promise.resolve();
    }
    this.t = end;
    await new Promise((r) => setImmediate(r));
  }
}

class RecordingPatcher implements ActivityPatcher {
  readonly patches: Array<{ key: string; at: number }> = [];
  fail: Error | undefined;
  patchLastActivity(namespace: string, name: string, at: Date): Promise<void> {
    this.patches.push({ key: `${namespace}/${name}`, at: at.getTime() });
    return this.fail === undefined ? Promise.resolve() : Promise.reject(this.fail);
  }
}

function setup(throttleMs = 15_000) {
  const timers = new ManualTimers();
  const patcher = new RecordingPatcher();
  const logs: string[] = [];
  const outcomes: string[] = [];
  const log = {
    warn: (_o: unknown, m?: string) => void logs.push(`warn ${m}`),
    debug: (_o: unknown, m?: string) => void logs.push(`debug ${m}`),
  };
  const r = new ThrottledActivityReporter({
    patcher,
    throttleMs,
    log,
    timers,
    onPatch: (o) => outcomes.push(o),
  });
  return { timers, patcher, logs, outcomes, r };
}

const s = { namespace: 'ns', name: 'a', idleTimeoutSeconds: 1800 };

describe('ThrottledActivityReporter', () => {
  it('patches at once, then at most once per interval with one trailing patch for the burst', async () => {
    const { timers, patcher, r } = setup();
    r.touch(s);
    await timers.advance(1000);
    r.touch(s);
    r.touch(s);
    await timers.advance(5000);
    r.touch(s);
    expect(patcher.patches.map((p) => p.at)).toEqual([0]);
    await timers.advance(10_000);
    expect(patcher.patches.map((p) => p.at)).toEqual([0, 15_000]);
    await timers.advance(60_000);
    expect(patcher.patches).toHaveLength(2);
  });

  it('caps the interval at a third of the idle timeout', async () => {
    const { timers, patcher, r } = setup();
    const short = { ...s, idleTimeoutSeconds: 9 };
    expect(r.intervalMs(short)).toBe(3000);
    r.touch(short);
    await timers.advance(100);
    r.touch(short);
    await timers.advance(3000);
    expect(patcher.patches.map((p) => p.at)).toEqual([0, 3000]);
  });

  it('keeps a heartbeat while a call runs and records its end', async () => {
    const { timers, patcher, r } = setup(10_000);
    const end = r.begin(s);
    await timers.advance(35_000);
    expect(patcher.patches.map((p) => p.at)).toEqual([0, 10_000, 20_000, 30_000]);
    end();
    await timers.advance(10_000);
    expect(patcher.patches.map((p) => p.at)).toEqual([0, 10_000, 20_000, 30_000, 40_000]);
    await timers.advance(100_000);
    expect(patcher.patches).toHaveLength(5);
    expect(r.tracked).toBe(0);
  });

  it('throttles sessions independently', async () => {
    const { timers, patcher, r } = setup();
    r.touch(s);
    r.touch({ ...s, name: 'b' });
    await timers.advance(1);
    expect(patcher.patches.map((p) => p.key)).toEqual(['ns/a', 'ns/b']);
  });

  it('logs a failed patch once as a warning and never throws; a 404 is only debug', async () => {
    const { timers, patcher, logs, outcomes, r } = setup();
    patcher.fail = new Error('apiserver down');
    expect(() => r.touch(s)).not.toThrow();
    await timers.advance(1);
    patcher.fail = Object.assign(new Error('not found'), { code: 404 });
    r.touch({ ...s, name: 'gone' });
    await timers.advance(1);
    expect(logs).toEqual(['warn activity patch failed', 'debug activity patch: session is gone']);
    expect(outcomes).toEqual(['error', 'gone']);
  });

  it('flush() sends pending trailing patches and stops further ones', async () => {
    const { timers, patcher, r } = setup();
    r.touch(s);
    await timers.advance(1000);
    r.touch(s);
    await r.flush();
    expect(patcher.patches.map((p) => p.at)).toEqual([0, 1000]);
    r.touch(s);
    await timers.advance(60_000);
    expect(patcher.patches).toHaveLength(2);
  });
});
