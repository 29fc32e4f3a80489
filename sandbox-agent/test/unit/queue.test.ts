/** Commands are serialized: concurrent calls run one after the other, in arrival order. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { TestAgent } from './helpers/test-agent.js';

describe('command queue', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start();
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('runs two concurrent requests in order without interleaving their output', async () => {
    const loop = (tag: string): string =>
      `echo "start $(date +%s%N)"; for i in 1 2 3 4 5; do echo ${tag}$i; echo ${tag}err$i >&2; sleep 0.05; done; echo "end $(date +%s%N)"`;
    const first = agent.exec({ command: loop('a') });
    // Make sure the first request reached the agent before the second is sent.
    await new Promise((r) => setTimeout(r, 30));
    const second = agent.exec({ command: loop('b') });
    const [a, b] = await Promise.all([first, second]);
    const lines = (s: string): string[] => s.trim().split('\n');
    expect(lines(a.stdout).slice(1, -1)).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
    expect(lines(b.stdout).slice(1, -1)).toEqual(['b1', 'b2', 'b3', 'b4', 'b5']);
    expect(lines(a.stderr)).toEqual(['aerr1', 'aerr2', 'aerr3', 'aerr4', 'aerr5']);
    expect(lines(b.stderr)).toEqual(['berr1', 'berr2', 'berr3', 'berr4', 'berr5']);
    const stamp = (s: string, which: string): bigint =>
      BigInt(/(?:^|\n)(?:start|end) (\d+)/.exec(s.slice(s.indexOf(which)))?.[1] ?? '0');
    expect(stamp(b.stdout, 'start')).toBeGreaterThanOrEqual(stamp(a.stdout, 'end'));
  });

  it('starts the deadline when a command leaves the queue, not when it arrives', async () => {
    const busy = agent.exec({ command: 'sleep 1.5; echo busy-done' });
    await new Promise((r) => setTimeout(r, 30));
    // Waits ~1.5 s in the queue, runs in milliseconds: must not time out with a 1 s deadline.
    const queued = await agent.exec({ command: 'echo quick', timeoutSeconds: 1 });
    expect(queued).toMatchObject({ stdout: 'quick\n', timedOut: false, exitCode: 0 });
    expect((await busy).stdout).toBe('busy-done\n');
  });

  it('runs each of many concurrent requests exactly once', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => agent.exec({ command: `echo ${i} >> order.txt; echo ${i}` })),
    );
    expect(results.map((r) => r.stdout)).toEqual(Array.from({ length: 20 }, (_, i) => `${i}\n`));
    const order = (await agent.sh('cat order.txt')).trim().split('\n').map(Number);
    expect(order.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});
