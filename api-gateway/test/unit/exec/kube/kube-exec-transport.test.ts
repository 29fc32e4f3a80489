import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';

import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';

import { KubernetesExecTransport, type PodExecutor } from '../../../../src/exec/kube/kube-exec-transport.js';
import type { ExecSocket } from '../../../../src/exec/kube/pod-run.js';
import { readLimited } from '../../../../src/exec/read-limited.js';
import type { ExecTarget } from '../../../../src/sessions/model.js';
import { LocalPodExecutor } from '../../../helpers/local-pod-executor.js';

const target: ExecTarget = {
  namespace: 'team-a',
  name: 'k',
  uid: 'uid-k',
  podName: 'sbs-k',
  podIP: '10.0.0.1',
  transport: 'KubernetesExec',
  idleTimeoutSeconds: 1800,
};

describe('KubernetesExecTransport', () => {
  let ws: string;
  beforeAll(() => {
    ws = mkdtempSync(join(tmpdir(), 'gw-kx-'));
  });
  afterAll(() => rmSync(ws, { recursive: true, force: true }));

  const make = (
    executor: PodExecutor,
    maxOutputBytes = 1 << 20,
    deadlineMarginMs = 2000,
  ): KubernetesExecTransport =>
    new KubernetesExecTransport({
      executor,
      maxOutputBytes,
      deadlineMarginMs,
      fileTimeoutMs: 5000,
      workspace: ws,
    });

  it('execs in the sandbox container of the session pod and returns the agent result shape', async () => {
    const ex = new LocalPodExecutor();
    const r = await make(ex).exec(target, { command: 'echo out; echo err >&2; exit 3', timeoutSeconds: 5 });
    expect(r).toMatchObject({
      stdout: 'out\n',
      stderr: 'err\n',
      stdoutEncoding: 'utf-8',
      stderrEncoding: 'utf-8',
      exitCode: 3,
      truncated: false,
      timedOut: false,
      shellReset: false,
    });
    expect(typeof r.durationMs).toBe('number');
    expect(ex.calls[0]).toMatchObject({
      namespace: 'team-a',
      podName: 'sbs-k',
      container: 'sandbox',
      stdin: null,
    });
  });

  it('returns invalid UTF-8 as base64', async () => {
    const r = await make(new LocalPodExecutor()).exec(target, {
      command: "printf '\\377\\376'",
      timeoutSeconds: 5,
    });
    expect([r.stdout, r.stdoutEncoding]).toEqual([Buffer.from([0xff, 0xfe]).toString('base64'), 'base64']);
  });

  it('caps each stream and marks the result truncated without splitting a character', async () => {
    const r = await make(new LocalPodExecutor(), 1024).exec(target, {
      command: "yes 'é' | head -c 5000",
      timeoutSeconds: 5,
    });
    expect(r.truncated).toBe(true);
    expect(r.stdoutEncoding).toBe('utf-8');
    expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(1024);
  });

  it('reports a timeout as exit 124 with timedOut, keeping the partial output', async () => {
    const r = await make(new LocalPodExecutor()).exec(target, {
      command: 'echo started; sleep 20',
      timeoutSeconds: 1,
    });
    expect(r).toMatchObject({ exitCode: 124, timedOut: true, stdout: 'started\n' });
  });

  it('closes the socket at timeout + margin when no status ever comes', async () => {
    const sockets: Array<EventEmitter & ExecSocket> = [];
    const silent: PodExecutor = {
      exec: () => {
        const s = Object.assign(new EventEmitter(), {
          protocol: 'v5.channel.k8s.io',
          close: () => s.emit('close'),
        });
        sockets.push(s);
        return Promise.resolve(s);
      },
    };
    // A fake clock: the hard deadline fires only when the test moves time.
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      let outcome: unknown = 'pending';
      const call = make(silent, 1024, 200)
        .exec(target, { command: 'hang', timeoutSeconds: 1 })
        .then((r) => (outcome = r));
      await jest.advanceTimersByTimeAsync(1000 + 200 - 1);
      expect([outcome, sockets.length]).toEqual(['pending', 1]);
      await jest.advanceTimersByTimeAsync(1);
      expect(outcome).toMatchObject({ exitCode: 124, timedOut: true });
      await call;
    } finally {
      jest.useRealTimers();
    }
  });

  it('maps a failed WebSocket handshake and a status without exit code to 502', async () => {
    const refused: PodExecutor = { exec: () => Promise.reject(new Error('Unexpected server response: 403')) };
    await expect(make(refused).exec(target, { command: 'x', timeoutSeconds: 1 })).rejects.toMatchObject({
      slug: 'upstream-error',
    });
    const broken: PodExecutor = {
      exec: (call) => {
        const s = Object.assign(new EventEmitter(), {
          protocol: 'v5.channel.k8s.io',
          close: () => undefined,
        });
        setImmediate(() =>
          call.onStatus({ status: 'Failure', reason: 'InternalError', message: 'container not found' }),
        );
        return Promise.resolve(s);
      },
    };
    await expect(make(broken).exec(target, { command: 'x', timeoutSeconds: 1 })).rejects.toMatchObject({
      slug: 'upstream-error',
      detail: 'pods/exec failed: container not found',
    });
  });

  it('refuses commands too long for the exec URL with 400', async () => {
    await expect(
      make(new LocalPodExecutor()).exec(target, { command: 'x'.repeat(70_000), timeoutSeconds: 1 }),
    ).rejects.toMatchObject({
      slug: 'invalid-request',
    });
  });

  it('streams NDJSON events ending with the exit line', async () => {
    const stream = await make(new LocalPodExecutor()).execStream(target, {
      command: 'echo a; sleep 0.2; echo b >&2; exit 2',
      timeoutSeconds: 5,
    });
    const lines = (await readLimited(stream, 10_000))
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.slice(0, -1)).toEqual([
      { type: 'stdout', data: 'a\n', encoding: 'utf-8' },
      { type: 'stderr', data: 'b\n', encoding: 'utf-8' },
    ]);
    expect(lines.at(-1)).toMatchObject({
      type: 'exit',
      exitCode: 2,
      timedOut: false,
      truncated: false,
      shellReset: false,
    });
  });

  it('writes a file through stdin and reads it back', async () => {
    const t = make(new LocalPodExecutor());
    expect(await t.writeFile(target, 'd/f.bin', Buffer.from([1, 2, 3]))).toEqual({
      path: 'd/f.bin',
      size: 3,
    });
    expect([...readFileSync(join(ws, 'd/f.bin'))]).toEqual([1, 2, 3]);
    const file = await t.readFile(target, 'd/f.bin', 100);
    expect([...(await readLimited(file.body, 100))]).toEqual([1, 2, 3]);
  });

  it('maps file script exits to path-forbidden, not-found and payload-too-large', async () => {
    const t = make(new LocalPodExecutor());
    await expect(t.readFile(target, '../x', 10)).rejects.toMatchObject({ slug: 'path-forbidden' });
    await expect(t.readFile(target, 'missing', 10)).rejects.toMatchObject({ slug: 'not-found' });
    await t.writeFile(target, 'big', Buffer.alloc(50));
    await expect(t.readFile(target, 'big', 10)).rejects.toMatchObject({ slug: 'payload-too-large' });
  });

  it('refuses uploads when the API server cannot half-close stdin (no v5 protocol)', async () => {
    const ex = new LocalPodExecutor();
    ex.protocol = 'v4.channel.k8s.io';
    await expect(make(ex).writeFile(target, 'x', Buffer.from('x'))).rejects.toMatchObject({
      slug: 'not-supported',
    });
  });
});
