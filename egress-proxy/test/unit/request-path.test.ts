/**
 * The pieces of the plain HTTP request path that keep state between requests: host decisions
 * cached per rule set (and dropped when the rules change) and the shared idle timer of upstream
 * requests. The session index's rule sets (one array while unchanged): session-index.test.ts.
 */
import { describe, expect, it, jest } from '@jest/globals';

import { IdleTimeouts } from '../../src/idle.js';
import { DecisionCache, DECISIONS_PER_RULE_SET, decideHost, type EgressRule } from '../../src/rules.js';

describe('DecisionCache', () => {
  it('decides as decideHost, once per rule set, host and port', () => {
    const cache = new DecisionCache();
    const rules: EgressRule[] = [{ host: '*.example.com', ports: [80] }, { host: 'pypi.org' }];
    for (const [host, port] of [
      ['a.example.com', 80],
      ['a.example.com', 443],
      ['example.com', 80],
      ['PyPI.org.', 443],
      ['10.0.0.1', 80],
      ['bad_host', 80],
    ] as const) {
      const first = cache.decide(rules, host, port);
      expect(first).toEqual(decideHost(rules, host, port));
      expect(cache.decide(rules, host, port)).toBe(first);
    }
  });

  it('decides again when the rules change (a new rule set)', () => {
    const cache = new DecisionCache();
    let rules: EgressRule[] = [{ host: 'pypi.org' }];
    expect(cache.decide(rules, 'pypi.org', 443).allowed).toBe(true);
    rules = [{ host: 'github.com' }];
    expect(cache.decide(rules, 'pypi.org', 443)).toEqual({ allowed: false, reason: 'no-rule' });
    rules = [{ host: 'pypi.org', ports: [8443] }];
    expect(cache.decide(rules, 'pypi.org', 443).allowed).toBe(false);
    expect(cache.decide(rules, 'pypi.org', 8443).allowed).toBe(true);
  });

  it('keeps a bounded number of decisions per rule set', () => {
    const cache = new DecisionCache();
    const rules: EgressRule[] = [{ host: '*.example.com' }];
    const first = cache.decide(rules, 'h0.example.com', 80);
    for (let i = 1; i <= DECISIONS_PER_RULE_SET; i++) cache.decide(rules, `h${i}.example.com`, 80);
    // The cache was emptied once full: the first host is decided again (an equal, new object).
    const again = cache.decide(rules, 'h0.example.com', 80);
    expect(again).toEqual(first);
    expect(again).not.toBe(first);
  });
});

describe('IdleTimeouts', () => {
  it('calls onIdle once a request made no progress for timeoutMs, never before', () => {
    let now = 0;
    const t = new IdleTimeouts(1000, () => now);
    expect(t.tickMs).toBe(250);
    const idle = jest.fn();
    const busy = jest.fn();
    const ended = jest.fn();
    t.add(idle);
    const b = t.add(busy);
    const e = t.add(ended);
    t.delete(e);
    for (now = 250; now < 1000; now += 250) {
      t.touch(b);
      t.tick();
    }
    expect(idle).not.toHaveBeenCalled();
    now = 1000;
    t.touch(b);
    t.tick();
    expect(idle).toHaveBeenCalledTimes(1);
    now = 1999;
    t.tick();
    expect(busy).not.toHaveBeenCalled();
    now = 2000;
    t.tick();
    t.tick();
    expect(busy).toHaveBeenCalledTimes(1);
    expect(idle).toHaveBeenCalledTimes(1);
    expect(ended).not.toHaveBeenCalled();
    expect(t.size).toBe(0);
    t.tick(); // nothing left: the interval stops
  });

  it('runs its interval only while requests are watched, on the real clock', async () => {
    const t = new IdleTimeouts(40);
    const fired = await new Promise<number>((resolve) => {
      const start = performance.now();
      t.add(() => resolve(performance.now() - start));
    });
    expect(fired).toBeGreaterThanOrEqual(39);
    expect(fired).toBeLessThan(40 + 4 * t.tickMs + 200);
    await new Promise((r) => setTimeout(r, 3 * t.tickMs));
    expect((t as unknown as { timer: unknown }).timer).toBeUndefined();
  });
});
