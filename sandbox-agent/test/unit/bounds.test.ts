/**
 * Bounds on what callers can make the agent hold: waiting commands and open connections. The
 * sandbox's own processes can read the token and reach the agent on loopback, so these are
 * reachable from inside the sandbox too.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';

import { eventually, TestAgent } from './helpers/test-agent.js';

describe('command queue bound', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start({ maxQueuedCommands: 2 });
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('answers 503 shell-unavailable beyond the waiting limit; the queued commands still run', async () => {
    const running = agent.exec({ command: 'touch started; sleep 3; echo first' });
    await eventually('the first command runs', () =>
      Promise.resolve(existsSync(join(agent.workspace, 'started'))),
    );
    // One connection each (the helper's pool has only 4), all sent while the first command runs:
    // two wait, three are refused, whichever they are.
    const post = async (i: number) => {
      const res = await fetch(`${agent.running.url}/v1/exec`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command: `echo ${i}` }),
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
    };
    const answers = await Promise.all([1, 2, 3, 4, 5].map(post));
    const refused = answers.filter((r) => r.status === 503);
    expect(answers.filter((r) => r.status === 200)).toHaveLength(2);
    expect(refused).toHaveLength(3);
    for (const r of refused) {
      expect(r.retryAfter).toBe('1');
      expect(r.body).toMatchObject({
        type: 'https://sandbox.dev/problems/shell-unavailable',
        detail: 'the command queue is full (2 commands waiting)',
      });
    }
    expect((await running).stdout).toBe('first\n');
  }, 20_000);
});

describe('connection bound', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start({ maxConnections: 3 });
  });
  afterAll(async () => {
    await agent.stop();
  });

  async function openIdle(): Promise<Socket> {
    const socket = connect(agent.running.port, '127.0.0.1');
    await once(socket, 'connect');
    return socket;
  }

  it('closes connections beyond the limit at once, and serves again when one is released', async () => {
    agent.httpAgent.destroy(); // the helper's pooled connections would count too
    const held = [await openIdle(), await openIdle(), await openIdle()];
    const extra = await openIdle();
    // The server accepts and closes it: the client sees the end without sending anything.
    await once(extra, 'close');
    held.pop()?.destroy();
    await eventually('a request is served again', async () => {
      try {
        return (await agent.send({ method: 'GET', path: '/healthz' }, false)).status === 200;
      } catch {
        return false;
      }
    });
    for (const s of held) s.destroy();
  }, 15_000);
});
