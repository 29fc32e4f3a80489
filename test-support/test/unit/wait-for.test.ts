import { describe, expect, it } from '@jest/globals';

import { predicate, waitFor, WaitTimeoutError } from '../../src/wait-for.js';

describe('waitFor', () => {
  it('returns the first value that satisfies the predicate', async () => {
    let calls = 0;
    const value = await waitFor(
      () => Promise.resolve(++calls),
      predicate('a count of 3', (n: number) => n >= 3),
      { intervalMs: 1 },
    );
    expect(value).toBe(3);
  });

  it('retries a fetch that throws until it succeeds', async () => {
    let calls = 0;
    const value = await waitFor(
      () => (++calls < 3 ? Promise.reject(new Error('not yet')) : Promise.resolve('ok')),
      predicate('ok', (v: string) => v === 'ok'),
      { intervalMs: 1 },
    );
    expect(value).toBe('ok');
  });

  it('names the predicate and the last value on timeout', async () => {
    const err = await waitFor(
      () => Promise.resolve({ phase: 'Pending' }),
      predicate('pod phase Running', (p: { phase: string }) => p.phase === 'Running'),
      { timeoutMs: 30, intervalMs: 5 },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitTimeoutError);
    expect((err as Error).message).toMatch(
      /waiting for pod phase Running \(last value: \{"phase":"Pending"\}\)/,
    );
  });

  it('keeps the last fetch error as the cause on timeout', async () => {
    const failure = new Error('connection refused');
    const err = await waitFor(
      () => Promise.reject(failure),
      predicate('anything', () => true),
      { timeoutMs: 20, intervalMs: 5 },
    ).catch((e: unknown) => e);
    expect((err as Error).message).toContain('no value was fetched; last error: connection refused');
    expect((err as Error).cause).toBe(failure);
  });
});
