/**
 * The drop reporter (src/drops/reporter.ts) with a fake sender: drops wait at most `batchMs`, a
 * full batch goes at once, one request at a time, the queue is bounded (what it refuses is
 * counted), a failed send is retried with the same drops, a refused batch is counted and not
 * retried, and a drop older than DROP_MAX_AGE_MS is given up. The real HTTP sender against the
 * audit service: drops-server.test.ts.
 */
import { describe, expect, it } from '@jest/globals';

import { DROP_MAX_AGE_MS, type DroppedPacket, type WireDrop } from '../../src/drops/drop.js';
import type { ReaderLog } from '../../src/drops/reader.js';
import { DropReporter, type SendResult } from '../../src/drops/reporter.js';

const quiet: ReaderLog = { info: () => undefined, warn: () => undefined, error: () => undefined };
const drop = (i: number): DroppedPacket => ({
  src: '10.0.0.9',
  dst: '1.1.1.1',
  proto: 'tcp',
  sport: i,
  dport: 443,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits until `cond` holds (a loaded machine may take a while), failing after 3 s. */
async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met within 3 s');
    await sleep(5);
  }
}
const accepted = (batch: WireDrop[]): SendResult => ({
  ok: true,
  answer: { recorded: batch.length, unknownSource: 0, capped: 0 },
});

describe('DropReporter', () => {
  it('sends what waited after batchMs, in order, with each drop’s age', async () => {
    const sent: WireDrop[][] = [];
    const r = new DropReporter({
      send: (b) => (sent.push(b), Promise.resolve(accepted(b))),
      log: quiet,
      batchMs: 200,
    });
    r.push(drop(1));
    r.push(drop(2));
    await sleep(10);
    expect(sent).toHaveLength(0);
    await until(() => sent.length === 1);
    expect(sent[0]!.map((d) => d.sport)).toEqual([1, 2]);
    expect(sent[0]![0]!.ageMs).toBeGreaterThanOrEqual(150);
    expect(sent[0]![0]!.ageMs).toBeLessThan(3000);
    expect(r.stats).toMatchObject({ sent: 2, recorded: 2, failures: 0 });
    r.stop();
  });

  it('a full batch goes at once; one request at a time; the rest follows', async () => {
    const sent: number[] = [];
    let release: () => void = () => undefined;
    const r = new DropReporter({
      send: async (b) => {
        sent.push(b.length);
        await new Promise<void>((res) => (release = res));
        return accepted(b);
      },
      log: quiet,
      batchMs: 10_000,
      batchMax: 3,
    });
    for (let i = 0; i < 7; i++) r.push(drop(i));
    await until(() => sent.length === 1);
    await sleep(20);
    expect(sent).toEqual([3]); // the first full batch, at once; no second request while it runs
    release();
    await until(() => sent.length === 2);
    release();
    await until(() => r.stats.sent === 6);
    await sleep(20);
    expect(sent).toEqual([3, 3]);
    expect(r.pending).toBe(1); // less than a batch: waits for batchMs
    r.stop();
  });

  it('bounds the queue and counts what it refused', async () => {
    const r = new DropReporter({
      send: (b) => Promise.resolve(accepted(b)),
      log: quiet,
      batchMs: 10_000,
      batchMax: 500,
      queueMax: 5,
    });
    for (let i = 0; i < 12; i++) r.push(drop(i));
    expect(r.pending).toBe(5);
    expect(r.stats.queueFull).toBe(7);
    await r.flush();
    expect(r.stats.sent).toBe(5);
    r.stop();
  });

  it('retries a failed send with the same drops, and counts the failure', async () => {
    const sent: number[][] = [];
    let fail = 2;
    const warnings: unknown[] = [];
    const r = new DropReporter({
      send: (b) => {
        sent.push(b.map((d) => d.sport!));
        if (fail-- > 0) return Promise.resolve({ ok: false, retry: true, reason: 'HTTP 503' });
        return Promise.resolve(accepted(b));
      },
      log: { ...quiet, warn: (msg, f) => warnings.push({ msg, ...f }) },
      batchMs: 10,
      retryMaxMs: 40,
    });
    r.push(drop(1));
    r.push(drop(2));
    await until(() => r.stats.sent > 0);
    expect(sent).toEqual([
      [1, 2],
      [1, 2],
      [1, 2],
    ]);
    expect(r.stats).toMatchObject({ sent: 2, failures: 2, rejected: 0 });
    expect(warnings[0]).toMatchObject({ msg: 'sending drops failed; retrying', reason: 'HTTP 503' });
    r.stop();
  });

  it('a thrown send counts as a failure to retry, not an unhandled rejection', async () => {
    let calls = 0;
    const r = new DropReporter({
      send: (b) => {
        if (calls++ === 0) return Promise.reject(new Error('boom'));
        return Promise.resolve(accepted(b));
      },
      log: quiet,
      batchMs: 5,
      retryMaxMs: 10,
    });
    r.push(drop(1));
    await until(() => r.stats.sent > 0);
    expect(r.stats).toMatchObject({ sent: 1, failures: 1 });
    r.stop();
  });

  it('a batch refused as invalid is counted and logged, never retried', async () => {
    let calls = 0;
    const errors: unknown[] = [];
    const r = new DropReporter({
      send: () => (
        calls++,
        Promise.resolve({ ok: false, retry: false, reason: 'HTTP 400: drops[0]: invalid src' })
      ),
      log: { ...quiet, error: (msg, f) => errors.push({ msg, ...f }) },
      batchMs: 5,
    });
    r.push(drop(1));
    await until(() => r.stats.rejected > 0);
    await sleep(60);
    expect(calls).toBe(1);
    expect(r.stats).toMatchObject({ rejected: 1, sent: 0 });
    expect(errors).toEqual([
      { msg: 'drops refused by the audit service', drops: 1, reason: 'HTTP 400: drops[0]: invalid src' },
    ]);
    r.stop();
  });

  it('gives up drops older than DROP_MAX_AGE_MS (counted), sends the rest', async () => {
    let now = 1_000_000;
    const sent: WireDrop[][] = [];
    const r = new DropReporter({
      send: (b) => (sent.push(b), Promise.resolve(accepted(b))),
      log: quiet,
      batchMs: 10_000,
      clock: () => now,
    });
    r.push(drop(1));
    now += DROP_MAX_AGE_MS + 1;
    r.push(drop(2));
    await r.flush();
    expect(r.stats.expired).toBe(1);
    expect(sent).toEqual([[{ ...drop(2), ageMs: 0 }]]);
    r.stop();
  });
});
