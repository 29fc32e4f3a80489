/**
 * /livez fails when the agent is wedged (a queue that stopped moving, a starved I/O threadpool)
 * and only then; /healthz (readiness) is unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { LivenessCheck } from '../../src/http/liveness.js';
import { createLogger } from '../../src/log.js';
import { PersistentShell } from '../../src/shell/persistent-shell.js';
import { eventually, problemOf, TestAgent } from './helpers/test-agent.js';

const never = (): Promise<unknown> => new Promise(() => undefined);

describe('LivenessCheck', () => {
  it('is live while the queue moves and the threadpool answers', async () => {
    const check = new LivenessCheck({
      queue: { stalledMs: () => 1000 },
      stallLimitMs: 5000,
      ioProbePath: '/',
      ioProbe: () => Promise.resolve(),
    });
    expect(await check.check()).toEqual({ ok: true });
  });

  it('fails when the queue made no progress beyond the limit', async () => {
    const check = new LivenessCheck({
      queue: { stalledMs: () => 400_000 },
      stallLimitMs: 360_000,
      ioProbePath: '/',
      ioProbe: () => Promise.resolve(),
    });
    expect(await check.check()).toEqual({
      ok: false,
      reason: 'the command queue made no progress for 400 s',
    });
  });

  it('fails when the threadpool does not answer, and never queues a second probe behind the first', async () => {
    let probes = 0;
    const check = new LivenessCheck({
      queue: { stalledMs: () => 0 },
      stallLimitMs: 1000,
      ioProbePath: '/',
      ioTimeoutMs: 50,
      ioProbe: () => {
        probes++;
        return never();
      },
    });
    for (let i = 0; i < 3; i++) {
      expect(await check.check()).toEqual({
        ok: false,
        reason: 'the I/O threadpool did not answer within 50 ms',
      });
    }
    expect(probes).toBe(1);
  });

  it('counts a failing stat as an answer (only a thread that never runs it is a failure)', async () => {
    const check = new LivenessCheck({
      queue: { stalledMs: () => 0 },
      stallLimitMs: 1000,
      ioProbePath: '/nonexistent/dir',
    });
    expect(await check.check()).toEqual({ ok: true });
  });
});

describe('PersistentShell progress', () => {
  it('counts stall time only while there is work, from when the work arrived', async () => {
    let now = 1_000_000;
    const shell = new PersistentShell({
      bashPath: 'bash',
      workspace: tmpdir(),
      env: { PATH: process.env.PATH ?? '' },
      outputCapBytes: 1024,
      logger: createLogger('silent'),
      now: () => now,
    });
    await shell.start();
    try {
      now += 3_600_000; // an hour idle is no stall
      expect(shell.stalledMs()).toBe(0);
      const running = shell.run({ command: 'sleep 0.5', timeoutSeconds: 5 }, { onOutput: () => undefined });
      now += 400_000;
      expect(shell.stalledMs()).toBe(400_000);
      await running;
      expect(shell.stalledMs()).toBe(0);
      expect(shell.recoveryBudgetMs).toBeGreaterThan(2000 + 10_000);
    } finally {
      await shell.close(0);
    }
  });
});

describe('GET /livez', () => {
  let agent: TestAgent;
  let fifos: string;

  beforeAll(async () => {
    agent = await TestAgent.start({}, { liveness: { stallLimitMs: 1500, ioTimeoutMs: 500 } });
    fifos = await mkdtemp(join(tmpdir(), 'sbx-fifos-'));
  });
  afterAll(async () => {
    await agent.stop();
    await rm(fifos, { recursive: true, force: true });
  });

  const livez = () => agent.send({ method: 'GET', path: '/livez' }, false);

  it('answers 200 without a token while the agent is fine', async () => {
    const res = await livez();
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({ status: 'ok' });
  });

  it('answers 503 agent-stalled while a command keeps the queue from moving beyond the limit', async () => {
    const running = agent.exec({ command: 'sleep 6', timeoutSeconds: 10 });
    let res = await livez();
    await eventually(
      '/livez fails while the command holds the queue',
      async () => {
        res = await livez();
        return res.status !== 200;
      },
      5000,
    );
    expect(res.status).toBe(503);
    expect(problemOf(res)).toMatchObject({
      type: 'https://sandbox.dev/problems/agent-stalled',
      detail: expect.stringMatching(/^the command queue made no progress for \d+ s$/),
    });
    // Readiness is a different question: the shell is up.
    expect((await agent.send({ method: 'GET', path: '/healthz' }, false)).status).toBe(200);
    await running;
    expect((await livez()).status).toBe(200);
  }, 15_000);

  it('answers 503 while every I/O thread is blocked, and 200 again once they are free', async () => {
    // Starve libuv's 4 threads as the FIFO GETs once did: opens of FIFOs without a writer, made
    // here in the test process (the agent runs in it too).
    const paths = [1, 2, 3, 4].map((i) => join(fifos, `f${i}`));
    expect(spawnSync('mkfifo', paths).status).toBe(0);
    const opens = paths.map((p) => open(p, 'r'));
    try {
      const res = await livez();
      expect(res.status).toBe(503);
      expect(problemOf(res).detail).toBe('the I/O threadpool did not answer within 500 ms');
    } finally {
      for (const p of paths) spawn('sh', ['-c', `: > '${p}'`], { stdio: 'ignore' });
      for (const handle of await Promise.all(opens)) await handle.close();
    }
    expect((await livez()).status).toBe(200);
  }, 15_000);
});
