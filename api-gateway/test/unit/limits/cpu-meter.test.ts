import { Readable } from 'node:stream';

import { describe, expect, it } from '@jest/globals';

import { NdjsonGuard } from '../../../src/exec/ndjson-guard.js';
import { readLimited } from '../../../src/exec/read-limited.js';
import { CpuMeters, UNMETERED, type CpuMeter } from '../../../src/limits/cpu-meter.js';

describe('CpuMeters', () => {
  it('lets a key spend its burst, then asks it to wait until the debt is repaid at the rate', () => {
    let now = 0;
    const meters = new CpuMeters(100, 100, () => now); // 100 ms of CPU per second, burst 100 ms
    const a = meters.forKey('a');
    expect(a.charge(60)).toBe(0);
    expect(a.charge(60)).toBe(200); // 20 ms in debt at 0.1 ms/ms: 200 ms
    now += 200;
    expect(a.charge(0)).toBe(0);
    now += 10_000; // refills up to the burst only
    expect(a.charge(100)).toBe(0);
    expect(a.charge(1)).toBe(10);
  });

  it('keeps one meter per key, independent of the others', () => {
    const now = 0;
    const meters = new CpuMeters(100, 100, () => now);
    expect(meters.forKey('a').charge(150)).toBeGreaterThan(0);
    expect(meters.forKey('b').charge(50)).toBe(0);
    expect(meters.forKey('a')).toBe(meters.forKey('a'));
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
