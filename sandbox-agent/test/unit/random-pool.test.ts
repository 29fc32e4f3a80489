/** The pooled random source of the sentinels: every byte handed out once, refilled when spent. */
import { describe, expect, it } from '@jest/globals';

import { Execution } from '../../src/shell/execution.js';
import { RandomPool, SENTINEL_POOL_BYTES } from '../../src/shell/random-pool.js';

/** A fill that writes a counter, so each byte shows which fill and position it came from. */
function countingFill(): { fill: (buffer: Buffer) => void; fills: () => number } {
  let fills = 0;
  let next = 0;
  return {
    fill: (buffer) => {
      fills++;
      for (let i = 0; i < buffer.length; i++) buffer[i] = next++ & 0xff;
    },
    fills: () => fills,
  };
}

describe('RandomPool', () => {
  it('hands out consecutive unread bytes and fills only when a draw would not fit', () => {
    const source = countingFill();
    const pool = new RandomPool(8, source.fill);
    expect(source.fills()).toBe(0);
    expect(pool.hex(3)).toBe('000102');
    expect(pool.hex(3)).toBe('030405');
    expect(source.fills()).toBe(1);
    // 2 bytes left: a 3-byte draw refills instead of reusing or splitting across fills.
    expect(pool.hex(3)).toBe('08090a');
    expect(source.fills()).toBe(2);
    expect(pool.hex(5)).toBe('0b0c0d0e0f');
    expect(pool.hex(8)).toBe('1011121314151617');
    expect(source.fills()).toBe(3);
  });

  it('refuses draws it cannot serve from one fill', () => {
    const pool = new RandomPool(8);
    expect(() => pool.hex(9)).toThrow(/invalid draw/);
    expect(() => pool.hex(0)).toThrow(/invalid draw/);
    expect(() => new RandomPool(0)).toThrow(/invalid pool size/);
  });

  it('gives distinct draws across many refills of the real CSPRNG', () => {
    const pool = new RandomPool(64);
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) seen.add(pool.hex(16));
    expect(seen.size).toBe(1000);
    for (const hex of seen) expect(hex).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('sentinels from the pool', () => {
  it('are unique over more commands than one pool fill serves, and keep their shape', () => {
    const commands = (SENTINEL_POOL_BYTES / 16) * 3 + 1;
    const sentinels = new Set<string>();
    for (let i = 0; i < commands; i++) {
      const exec = new Execution({ command: ':' }, 1, { onOutput: () => {} });
      const halves = /^\d{8}__sbx_w=; .* '(__sbx_[0-9a-f]{16})' '([0-9a-f]{16}__)'/s.exec(exec.script);
      expect(halves).not.toBeNull();
      sentinels.add(halves![1]! + halves![2]!);
    }
    expect(sentinels.size).toBe(commands);
  });
});
