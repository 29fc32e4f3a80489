import net from 'node:net';

import { PassThrough } from 'node:stream';

import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { deriveToken } from '@sandbox-platform/api';

import { CallerGoneError, ProblemError } from '../../../../src/errors.js';
import { AgentPool } from '../../../../src/exec/agent/agent-pool.js';
import { AgentTransport } from '../../../../src/exec/agent/agent-transport.js';
import { readLimited } from '../../../../src/exec/read-limited.js';
import { ResponseSignal } from '../../../../src/routes/request-signal.js';
import { DEMO_TARGET, FakeAgent, json } from '../../../helpers/fake-agent.js';
import { result } from '../../../helpers/fake-transport.js';

const masterKey = Buffer.alloc(32, 7);
const target = DEMO_TARGET;

const EXIT_LINE =
  '{"type":"exit","exitCode":0,"durationMs":1,"truncated":false,"timedOut":false,"shellReset":false}\n';

/** Timeouts, retries and caps of every transport under test. */
const LIMITS = {
  connectTimeoutMs: 500,
  connectRetries: 2,
  deadlineMarginMs: 200,
  maxOutputBytes: 64 * 1024,
  fileTimeoutMs: 2000,
};

const until = async (cond: () => boolean): Promise<void> => {
  for (const deadline = Date.now() + 5000; !cond(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
  }
};

describe('AgentTransport', () => {
  let agent: FakeAgent;
  let port: number;
  let lookups: Array<string | undefined>;
  const make = (over: Partial<ConstructorParameters<typeof AgentTransport>[0]> = {}): AgentTransport =>
    new AgentTransport({
      ...LIMITS,
      masterKey,
      port,
      lookup: () => lookups.shift() ?? target.podIP,
      ...over,
    });

  beforeEach(async () => {
    agent = new FakeAgent();
    port = await agent.start();
    lookups = [];
  });
  afterEach(async () => {
    await agent.stop();
  });

  it('posts the exec with the token derived from namespace/name/uid and returns the result', async () => {
    agent.handler = (_req, res) => json(res, 200, result({ stdout: 'hi\n' }));
    const t = make();
    const out = await t.exec(target, { command: 'echo hi', timeoutSeconds: 5, env: { A: '1' } });
    expect(out.stdout).toBe('hi\n');
    const seen = agent.seen[0]!;
    expect([seen.method, seen.url]).toEqual(['POST', '/v1/exec']);
    expect(seen.headers.authorization).toBe(
      `Bearer ${deriveToken(masterKey, { namespace: 'team-a', name: 'demo', uid: 'uid-1' })}`,
    );
    expect(JSON.parse(seen.body.toString())).toEqual({
      command: 'echo hi',
      timeoutSeconds: 5,
      env: { A: '1' },
    });
    t.close();
  });

  it('keeps the pooled connection after a non-zero exit (only transport errors drop it)', async () => {
    agent.handler = (_req, res) => json(res, 200, result({ exitCode: 1 }));
    const t = make();
    await t.exec(target, { command: 'false', timeoutSeconds: 5 });
    await t.exec(target, { command: 'false', timeoutSeconds: 5 });
    expect(t.pool.has(`127.0.0.1:${port}`)).toBe(true);
    t.close();
  });

  it('retries a refused connect on the address the informer reports next, delivering once', async () => {
    agent.handler = (_req, res) => json(res, 200, result({ stdout: 'second address' }));
    lookups = ['127.0.0.2', '127.0.0.1']; // nothing listens on 127.0.0.2: ECONNREFUSED
    const t = make();
    const out = await t.exec(target, { command: 'true', timeoutSeconds: 5 });
    expect(out.stdout).toBe('second address');
    expect(agent.seen).toHaveLength(1);
    expect(t.pool.has(`127.0.0.2:${port}`)).toBe(false);
    t.close();
  });

  it('gives up after the connect retries with 502 upstream-error', async () => {
    lookups = ['127.0.0.2', '127.0.0.2', '127.0.0.2'];
    const t = make();
    const err = await t.exec(target, { command: 'true', timeoutSeconds: 5 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ slug: 'upstream-error', status: 502 });
    expect(agent.seen).toHaveLength(0);
    t.close();
  });

  it('never sends an exec twice: a reset after delivery fails with 502 and drops the pool', async () => {
    agent.handler = (_req, res) => res.socket?.destroy();
    const t = make();
    const err = await t.exec(target, { command: 'echo once', timeoutSeconds: 5 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ slug: 'upstream-error' });
    expect(agent.seen).toHaveLength(1);
    expect(t.pool.has(`127.0.0.1:${port}`)).toBe(false);
    t.close();
  });

  it('fails with 504 at timeoutSeconds + margin when the agent does not answer, not before', async () => {
    agent.handler = () => undefined; // never answers
    // A fake clock: the deadline timer fires only when the test moves time (the sockets' I/O,
    // setImmediate and nextTick stay real).
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const t = make();
      let outcome: unknown = 'pending';
      const call = t
        .exec(target, { command: 'sleep 100', timeoutSeconds: 1 })
        .then(
          () => 'answered',
          (e: unknown) => e,
        )
        .then((o) => (outcome = o));
      while (agent.seen.length === 0) await new Promise((r) => setImmediate(r));
      await jest.advanceTimersByTimeAsync(1000 + LIMITS.deadlineMarginMs - 1);
      expect(outcome).toBe('pending');
      await jest.advanceTimersByTimeAsync(1);
      // The destroyed socket's events take a few turns of the event loop, no fake time.
      for (let turn = 0; turn < 100 && outcome === 'pending'; turn++)
        await new Promise((r) => setImmediate(r));
      expect(outcome).toMatchObject({ slug: 'upstream-timeout', status: 504 });
      await call;
      expect(agent.seen).toHaveLength(1);
      expect(t.pool.has(`127.0.0.1:${port}`)).toBe(false);
      t.close();
    } finally {
      jest.useRealTimers();
    }
  });

  it.each([
    [
      404,
      { type: 'https://sandbox.dev/problems/not-found', title: 'x', status: 404, detail: 'no such file' },
      'not-found',
      404,
    ],
    [
      403,
      { type: 'https://sandbox.dev/problems/path-forbidden', title: 'x', status: 403 },
      'path-forbidden',
      403,
    ],
    [
      400,
      { type: 'https://sandbox.dev/problems/invalid-request', title: 'x', status: 400, detail: 'bad cwd' },
      'invalid-request',
      400,
    ],
    [
      503,
      { type: 'https://sandbox.dev/problems/shell-unavailable', title: 'x', status: 503 },
      'shell-unavailable',
      503,
    ],
    [
      401,
      { type: 'https://sandbox.dev/problems/unauthorized', title: 'x', status: 401 },
      'upstream-error',
      502,
    ],
    [500, { type: 'https://sandbox.dev/problems/internal', title: 'x', status: 500 }, 'upstream-error', 502],
  ])('maps agent HTTP %i to %s', async (status, body, slug, mapped) => {
    agent.handler = (_req, res) => json(res, status, body, 'application/problem+json');
    const t = make();
    const err = (await t
      .exec(target, { command: 'x', timeoutSeconds: 5 })
      .catch((e: unknown) => e)) as ProblemError;
    expect([err.slug, err.status]).toEqual([slug, mapped]);
    expect(t.pool.has(`127.0.0.1:${port}`)).toBe(true);
    t.close();
  });

  it('streams the NDJSON body through', async () => {
    agent.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write('{"type":"stdout","data":"a","encoding":"utf-8"}\n');
      setTimeout(() => res.end(EXIT_LINE), 20);
    };
    const t = make();
    const stream = await t.execStream(target, { command: 'x', timeoutSeconds: 5 });
    expect((await readLimited(stream, 1000)).toString()).toBe(
      '{"type":"stdout","data":"a","encoding":"utf-8"}\n' + EXIT_LINE,
    );
    expect(agent.seen[0]!.url).toBe('/v1/exec/stream');
    t.close();
  });

  it('uploads and downloads files with escaped path segments', async () => {
    agent.handler = (req, res) => {
      if (req.method === 'PUT') return json(res, 201, { path: 'a b/c.txt', size: req.body.length });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '3' });
      res.end('abc');
    };
    const t = make();
    expect(await t.writeFile(target, 'a b/c.txt', Buffer.from('hello'))).toEqual({
      path: 'a b/c.txt',
      size: 5,
    });
    const file = await t.readFile(target, 'a b/c.txt', 10);
    expect((await readLimited(file.body, 10)).toString()).toBe('abc');
    expect(agent.seen.map((s) => `${s.method} ${s.url} ${s.headers['content-type'] ?? ''}`)).toEqual([
      'PUT /v1/files/a%20b/c.txt application/octet-stream',
      'GET /v1/files/a%20b/c.txt ',
    ]);
    t.close();
  });

  it('refuses a download over the limit: by Content-Length, or while streaming', async () => {
    agent.handler = (req, res) => {
      if (req.url.endsWith('known')) {
        res.writeHead(200, { 'content-length': '20' });
        return res.end('x'.repeat(20));
      }
      res.writeHead(200); // chunked: size unknown up front
      res.write('x'.repeat(8));
      res.end('x'.repeat(8));
    };
    const t = make();
    await expect(t.readFile(target, 'known', 10)).rejects.toMatchObject({ slug: 'payload-too-large' });
    const chunked = await t.readFile(target, 'chunked', 10);
    await expect(readLimited(chunked.body, 1000)).rejects.toMatchObject({ slug: 'payload-too-large' });
    t.close();
  });

  it("a caller that goes away fails only its own call (not upstream-error): the agent's other calls keep their connections", async () => {
    agent.handler = (req, res) =>
      setTimeout(() => json(res, 200, result({ stdout: req.body.toString() })), 300);
    const t = make();
    const signal = new ResponseSignal();
    const gone = t.exec(target, { command: 'gone', timeoutSeconds: 5 }, { signal }).catch((e: unknown) => e);
    const other = t.exec(target, { command: 'other', timeoutSeconds: 5 });
    await until(() => agent.seen.length === 2);
    signal.abort();
    expect(JSON.parse((await other).stdout)).toMatchObject({ command: 'other' });
    expect(await gone).toBeInstanceOf(CallerGoneError);
    expect(t.pool.has(`127.0.0.1:${port}`)).toBe(true);
    t.close();
  });

  it("an upload that breaks off, or fails the caller's check, is the caller's: the pool stays", async () => {
    const t = make();
    const upload = (fail: Error | undefined): Promise<unknown> => {
      const body = new PassThrough();
      body.write('first bytes');
      // Once the call copies the body to the agent's connection (it flows), the body fails.
      void until(() => body.readableFlowing === true).then(() => body.destroy(fail));
      return t.writeFile(target, 'f.bin', { stream: body, size: 1000 }).catch((e: unknown) => e);
    };
    expect(await upload(undefined)).toBeInstanceOf(CallerGoneError);
    const tooLarge = new ProblemError('payload-too-large', 'the file exceeds the limit');
    expect(await upload(tooLarge)).toBe(tooLarge);
    expect(t.pool.has(`127.0.0.1:${port}`)).toBe(true);
    t.close();
  });

  it('reuses one connection for calls in sequence, and queues calls beyond maxSockets', async () => {
    const sockets = new Set<unknown>();
    agent.handler = (req, res) => {
      sockets.add(res.socket);
      setTimeout(() => json(res, 200, result({ stdout: req.body.toString() })), 10);
    };
    const t = make({ pool: new AgentPool(1) });
    await t.exec(target, { command: 'a', timeoutSeconds: 5 });
    await t.exec(target, { command: 'b', timeoutSeconds: 5 });
    const both = await Promise.all([
      t.exec(target, { command: 'c', timeoutSeconds: 5 }),
      t.exec(target, { command: 'd', timeoutSeconds: 5 }),
    ]);
    expect(both.map((r) => JSON.parse(r.stdout) as { command: string }).map((b) => b.command)).toEqual([
      'c',
      'd',
    ]);
    expect(sockets.size).toBe(1);
    t.close();
  });
});

describe('AgentTransport against a malformed agent', () => {
  let server: net.Server;
  let port: number;
  let answer: string;
  let connections: number;
  let requests: number;

  beforeEach(async () => {
    connections = 0;
    requests = 0;
    server = net.createServer((socket) => {
      connections++;
      socket.on('data', () => {
        requests++;
        socket.write(answer);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  afterEach(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const make = (): AgentTransport => new AgentTransport({ ...LIMITS, masterKey, port });
  const body = JSON.stringify(result({ stdout: 'ok' }));

  it.each([
    [
      'a smuggled second length',
      `HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    ],
    ['a bare LF in the head', `HTTP/1.1 200 OK\ncontent-length: ${body.length}\r\n\r\n${body}`],
    ['a broken chunk', `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\n${body}\r\n0\r\n\r\n`],
  ])(
    'fails with 502 agent-protocol-error on %s, sends once, and closes only that connection',
    async (_what, text) => {
      answer = text;
      const t = make();
      const err = await t.exec(target, { command: 'true', timeoutSeconds: 5 }).catch((e: unknown) => e);
      expect(err).toMatchObject({ slug: 'agent-protocol-error', status: 502 });
      expect(requests).toBe(1);
      // The agent's other calls keep their connections (a malformed answer is not a stale address).
      expect(t.pool.has(`127.0.0.1:${port}`)).toBe(true);
      answer = `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
      expect((await t.exec(target, { command: 'true', timeoutSeconds: 5 })).stdout).toBe('ok');
      expect(connections).toBe(2);
      t.close();
    },
  );

  it('keeps a complete answer followed by stray bytes, but not the connection', async () => {
    answer = `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}HTTP/1.1 200 OK\r\n`;
    const t = make();
    expect((await t.exec(target, { command: 'true', timeoutSeconds: 5 })).stdout).toBe('ok');
    expect((await t.exec(target, { command: 'true', timeoutSeconds: 5 })).stdout).toBe('ok');
    expect(connections).toBe(2);
    t.close();
  });
});
