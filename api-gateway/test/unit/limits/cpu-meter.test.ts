import { Readable } from 'node:stream';

import { describe, expect, it } from '@jest/globals';

import { NdjsonGuard } from '../../../src/exec/guards/ndjson-guard.js';
import { readLimited } from '../../../src/exec/read-limited.js';
import { CONTENDED_WINDOW_MS, CpuMeters, UNMETERED, type CpuMeter } from '../../../src/limits/cpu-meter.js';

describe('CpuMeters', () => {
  it('lets a key spend its burst, then asks it to wait until the debt is repaid at the rate (another key active)', () => {
    let now = 0;
    const meters = new CpuMeters(100, 100, () => now); // 100 ms of CPU per second, burst 100 ms
    const a = meters.forKey('a');
    const b = meters.forKey('b');
    expect(b.charge(0)).toBe(0); // b uses the answer path too
    expect(a.charge(60)).toBe(0);
    expect(a.charge(60)).toBe(200); // 20 ms in debt at 0.1 ms/ms: 200 ms
    now += 200;
    expect(b.charge(0)).toBe(0);
    expect(a.charge(0)).toBe(0);
    now += 10_000; // refills up to the burst only
    expect(b.charge(0)).toBe(0);
    expect(a.charge(100)).toBe(0);
    expect(a.charge(1)).toBe(10);
  });

  it('keeps one meter per key, independent of the others', () => {
    const now = 0;
    const meters = new CpuMeters(100, 100, () => now);
    meters.forKey('c').charge(0);
    expect(meters.forKey('a').charge(150)).toBeGreaterThan(0);
    expect(meters.forKey('b').charge(50)).toBe(0);
    expect(meters.forKey('a')).toBe(meters.forKey('a'));
  });

  it('is work-conserving: a key alone never waits, and starts from zero debt once another key shows up', () => {
    let now = 0;
    const meters = new CpuMeters(100, 100, () => now);
    const a = meters.forKey('a');
    for (let i = 0; i < 50; i++) {
      expect(a.charge(100)).toBe(0); // 5 s of CPU in no time: nobody else is waiting
      now += 1;
    }
    meters.forKey('b').charge(1);
    expect(a.charge(10)).toBe(99); // 9.9 ms in debt (0.1 ms refilled since; not 4,900 ms): 99 ms
    // b's last charge is older than the window: a is alone again.
    now += CONTENDED_WINDOW_MS + 1;
    expect(a.charge(500)).toBe(0);
    meters.forKey('b').charge(0);
    expect(a.charge(1)).toBe(10);
  });

  it('counts any other key: the latest charge of a third key keeps the share in force', () => {
    let now = 0;
    const meters = new CpuMeters(100, 100, () => now);
    const [a, b, c] = ['a', 'b', 'c'].map((k) => meters.forKey(k)) as [CpuMeter, CpuMeter, CpuMeter];
    b.charge(0);
    now += 500;
    c.charge(0);
    now += 600; // b is out of the window, c is not
    expect(a.charge(150)).toBe(500);
    now += CONTENDED_WINDOW_MS;
    expect(a.charge(150)).toBe(0); // c is out of the window too
  });

  it('is off at 0', () => {
    expect(new CpuMeters(0).forKey('a')).toBe(UNMETERED);
    expect(UNMETERED.charge(1e9)).toBe(0);
  });
});

describe('NdjsonGuard with a meter', () => {
  it('charges every chunk and holds the next one back while the key is in debt (backpressure)', async () => {
    const charged: number[] = [];
    let waits = 0;
    const meter: CpuMeter = {
      charge: (ms) => {
        charged.push(ms);
        return waits++ < 2 ? 5 : 0; // in debt for the first two chunks
      },
    };
    const exit =
      '{"type":"exit","exitCode":0,"durationMs":1,"truncated":false,"timedOut":false,"shellReset":false}\n';
    const lines = [
      '{"type":"stdout","data":"a","encoding":"utf-8"}\n',
      '{"type":"stdout","data":"b","encoding":"utf-8"}\n',
      exit,
    ];
    const guard = new NdjsonGuard({ maxBytes: 1 << 20, maxOutputBytes: 1000 }, meter);
    const out = await readLimited(Readable.from(lines.map((l) => Buffer.from(l))).pipe(guard), 1 << 20);
    expect(out.toString()).toBe(lines.join(''));
    expect(charged).toHaveLength(3);
    expect(charged.every((ms) => ms >= 0)).toBe(true);
  });
});
