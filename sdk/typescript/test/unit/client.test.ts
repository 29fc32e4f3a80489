import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from '@jest/globals';

import {
  AuthenticationError,
  ConnectionError,
  GatewayClient,
  GatewayError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  ProtocolError,
  RateLimitError,
  SandboxClient,
  SandboxError,
  SessionGoneError,
  TimeoutError,
  UnavailableError,
  UpstreamError,
  VERSION,
  decodeOutput,
  stdoutBytes,
} from '../../src/index.js';
import type { ExecResult, ExecStreamEvent, Session } from '../../src/index.js';
import { FakeFetch, enc, json, problem, refused, type Step } from './fake-fetch.js';

const SESSION: Session = {
  name: 's1',
  namespace: 'team-a',
  uid: 'u1',
  ready: true,
  reason: 'SandboxReady',
  message: '',
  execTransport: 'Agent',
};

function client(steps: Step[], opts: { namespace?: string; timeoutMs?: number; retries?: number } = {}) {
  const fake = new FakeFetch(steps);
  const { retries, ...rest } = opts;
  const c = new SandboxClient({
    baseUrl: 'http://gw.test:8080/',
    apiKey: 'k-123',
    fetch: fake.fetch,
    retry: { initialDelayMs: 1, ...(retries === undefined ? {} : { retries }) },
    ...rest,
  });
  return { fake, c };
}

describe('requests', () => {
  it('sends the key, the namespace (client default, string or options) and encoded paths', async () => {
    const { fake, c } = client([json(200, SESSION), json(200, SESSION), json(200, { items: [] })], {
      namespace: 'team-a',
    });
    await c.getSession('s1');
    await c.getSession('s1', 'team-b');
    await c.listSessions({ namespace: 'team-c' });
    expect(fake.calls.map((r) => `${r.method} ${r.url.pathname}${r.url.search}`)).toEqual([
      'GET /v1/sessions/s1?namespace=team-a',
      'GET /v1/sessions/s1?namespace=team-b',
      'GET /v1/sessions?namespace=team-c',
    ]);
    expect(fake.calls[0]?.headers.authorization).toBe('Bearer k-123');
  });

  it('create-or-get reports created from 201/200 and sends the body as JSON', async () => {
    const { fake, c } = client([json(201, SESSION), json(200, SESSION)]);
    expect((await c.createSession({ name: 's1', idleTimeoutSeconds: 60 })).created).toBe(true);
    expect((await c.createSession({ name: 's1' })).created).toBe(false);
    expect(JSON.parse(fake.calls[0]?.body ?? '')).toEqual({ name: 's1', idleTimeoutSeconds: 60 });
    expect(fake.calls[0]?.headers['content-type']).toBe('application/json');
  });

  it('uploads bytes as octet-stream to a path whose segments are encoded', async () => {
    const { fake, c } = client([json(201, { path: 'a b/c.txt', size: 3 })]);
    await c.writeFile('s1', 'a b/c.txt', new Uint8Array([0, 255, 10]));
    expect(fake.calls[0]?.url.pathname).toBe('/v1/sessions/s1/files/a%20b/c.txt');
    expect(fake.calls[0]?.headers['content-type']).toBe('application/octet-stream');
  });

  it('refuses . and .. path segments before sending (URL parsing would resolve them to another route)', async () => {
    const { fake, c } = client([]);
    for (const p of ['../etc/passwd', 'a/./b', 'a/..']) {
      const err = await c.readFile('s1', p).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PermissionDeniedError);
      expect(err).toMatchObject({ code: 'path-forbidden', status: 403 });
    }
    expect(fake.calls).toHaveLength(0);
  });

  it('keeps the first client name as an alias of the same class', () => {
    expect(GatewayClient).toBe(SandboxClient);
  });

  it('refuses a missing key or a base URL that is not http(s)', () => {
    expect(() => new SandboxClient({ baseUrl: 'http://x', apiKey: '' })).toThrow(/apiKey is required/);
    expect(() => new SandboxClient({ baseUrl: 'gw:8080', apiKey: 'k' })).toThrow(/http\(s\) URL/);
  });

  it('has the version of its package.json', () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
      version: string;
    };
    expect(VERSION).toBe(pkg.version);
  });
});

describe('suspend and resume', () => {
  it('POSTs suspend and resume (with waitSeconds) and returns the session', async () => {
    const suspended = { ...SESSION, ready: false, reason: 'Suspended', suspended: true };
    const { fake, c } = client([json(200, suspended), json(200, SESSION)], { namespace: 'team-a' });
    expect(await c.suspendSession('s1')).toEqual(suspended);
    expect(await c.resumeSession('s1', { waitSeconds: 20 })).toEqual(SESSION);
    expect(fake.calls.map((r) => `${r.method} ${r.url.pathname}${r.url.search} ${r.body ?? ''}`)).toEqual([
      'POST /v1/sessions/s1/suspend?namespace=team-a {}',
      'POST /v1/sessions/s1/resume?namespace=team-a {"waitSeconds":20}',
    ]);
  });

  it('retries both (idempotent: the same patch twice is one suspension)', async () => {
    const { fake, c } = client([refused(), json(200, SESSION), refused(), json(200, SESSION)]);
    await c.suspendSession('s1');
    await c.resumeSession('s1');
    expect(fake.calls.map((r) => r.url.pathname)).toEqual([
      '/v1/sessions/s1/suspend',
      '/v1/sessions/s1/suspend',
      '/v1/sessions/s1/resume',
      '/v1/sessions/s1/resume',
    ]);
  });

  it('a resume that is not Ready within waitSeconds is UnavailableError with the reason', async () => {
    const { c } = client([problem(503, 'session-not-ready', { reason: 'PodPending', retryAfter: '0' })], {
      retries: 0,
    });
    const err = await c.resumeSession('s1', { waitSeconds: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err).toMatchObject({ code: 'session-not-ready', reason: 'PodPending' });
  });

  it('sends persistentWorkspace and shutdownPolicy Suspend on create', async () => {
    const { fake, c } = client([json(201, SESSION)]);
    await c.createSession({ name: 's1', persistentWorkspace: true, shutdownPolicy: 'Suspend' });
    expect(JSON.parse(fake.calls[0]?.body ?? '')).toEqual({
      name: 's1',
      persistentWorkspace: true,
      shutdownPolicy: 'Suspend',
    });
  });
});

describe('typed errors from problem+json', () => {
  it.each([
    [problem(401, 'unauthorized'), AuthenticationError, 'unauthorized'],
    [problem(403, 'path-forbidden'), PermissionDeniedError, 'path-forbidden'],
    [problem(404, 'session-not-found', { detail: 'no session s1' }), NotFoundError, 'session-not-found'],
    [problem(410, 'session-gone', { reason: 'Deleted' }), SessionGoneError, 'session-gone'],
    [problem(504, 'upstream-timeout'), UpstreamError, 'upstream-timeout'],
    [problem(502, 'agent-protocol-error'), UpstreamError, 'agent-protocol-error'],
    [problem(429, 'rate-limited'), RateLimitError, 'rate-limited'],
    [problem(403, 'quota-exceeded'), PermissionDeniedError, 'quota-exceeded'],
    [problem(500, 'internal'), InternalServerError, 'internal'],
    [problem(418, 'teapot'), GatewayError, 'teapot'],
    [{ status: 502, body: '<html>bad gateway</html>' }, UpstreamError, 'http-502'],
  ] as const)('%# maps to its family with a stable code', async (step, cls, code) => {
    const { c } = client([step]);
    const err = await c.getSession('s1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(cls);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toBeInstanceOf(SandboxError);
    expect(err).toMatchObject({ code, slug: code, status: (step as { status: number }).status });
  });

  it('keeps detail, reason and Retry-After', async () => {
    const { c } = client([
      problem(503, 'session-not-ready', { retryAfter: '2', reason: 'PodPending', detail: 'd' }),
    ]);
    const err = (await c.exec('s1', { command: 'true' }).catch((e: unknown) => e)) as UnavailableError;
    expect(err).toBeInstanceOf(UnavailableError);
    expect([err.retryAfterSeconds, err.reason, err.detail, err.message]).toEqual([
      2,
      'PodPending',
      'd',
      '503 title of session-not-ready: d',
    ]);
  });

  it('turns an unreachable gateway into ConnectionError naming the address and the cause', async () => {
    const { c } = client([refused(), refused(), refused()]);
    const err = await c.listSessions().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err).toMatchObject({ code: 'connection-failed' });
    expect((err as Error).message).toBe(
      'cannot reach the gateway at http://gw.test:8080: connection refused (ECONNREFUSED)',
    );
  });

  it('turns its own deadline into TimeoutError', async () => {
    const { c } = client([{ hang: true }], { timeoutMs: 20 });
    const err = await c.getSession('s1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/GET \/v1\/sessions\/s1: no answer within 20 ms/);
  });

  it('passes a caller abort through unchanged', async () => {
    const { c } = client([{ hang: true }]);
    const ac = new AbortController();
    const pending = c.getSession('s1', { signal: ac.signal });
    ac.abort(new Error('caller gave up'));
    await expect(pending).rejects.toThrow('caller gave up');
  });

  it('refuses invalid JSON and answers above maxResponseBytes as ProtocolError', async () => {
    const { c } = client([{ status: 200, body: '{not json' }]);
    await expect(c.getSession('s1')).rejects.toBeInstanceOf(ProtocolError);
    const fake = new FakeFetch([
      { status: 200, chunks: Array.from({ length: 5 }, () => new Uint8Array(600)) },
    ]);
    const small = new SandboxClient({
      baseUrl: 'http://gw',
      apiKey: 'k',
      fetch: fake.fetch,
      maxResponseBytes: 1000,
    });
    await expect(small.readFile('s1', 'big.bin')).rejects.toThrow(/larger than the limit of 1000 bytes/);
    expect(fake.cancelled).toBe(true);
  });
});

describe('retries only where safe', () => {
  it('retries reads on connection failures and on 429/503 with Retry-After', async () => {
    const steps = [
      refused(),
      problem(503, 'gateway-not-ready', { retryAfter: '0' }),
      problem(429, 'rate-limited', { retryAfter: '0' }),
      json(200, SESSION),
    ];
    const { fake, c } = client(steps, { retries: 3 });
    expect((await c.getSession('s1')).name).toBe('s1');
    expect(fake.calls).toHaveLength(4);
  });

  it('never retries an exec or a streaming exec, whatever the failure', async () => {
    const refusals = [
      refused(),
      problem(503, 'shell-unavailable', { retryAfter: '0' }),
      problem(429, 'concurrency-limited', { retryAfter: '0' }),
    ];
    for (const step of refusals) {
      const { fake, c } = client([step, json(200, {})]);
      await expect(c.exec('s1', { command: 'date >> log' })).rejects.toBeInstanceOf(SandboxError);
      expect(fake.calls).toHaveLength(1);
      const s = client([step, json(200, {})]);
      await expect(s.c.execStream('s1', { command: 'x' }).next()).rejects.toBeInstanceOf(SandboxError);
      expect(s.fake.calls).toHaveLength(1);
    }
  });

  it('retries create-or-get only with a name (without one each try would create another session)', async () => {
    const named = client([refused(), json(201, SESSION)]);
    expect((await named.c.createSession({ name: 's1' })).created).toBe(true);
    expect(named.fake.calls).toHaveLength(2);
    const anonymous = client([refused(), json(201, SESSION)]);
    await expect(anonymous.c.createSession()).rejects.toBeInstanceOf(ConnectionError);
    expect(anonymous.fake.calls).toHaveLength(1);
  });

  it('does not retry 503 without Retry-After, nor other errors', async () => {
    const { fake, c } = client([problem(503, 'gateway-not-ready'), json(200, SESSION)]);
    await expect(c.getSession('s1')).rejects.toBeInstanceOf(UnavailableError);
    const nf = client([problem(404, 'session-not-found'), json(200, SESSION)]);
    await expect(nf.c.getSession('s1')).rejects.toBeInstanceOf(NotFoundError);
    expect([fake.calls.length, nf.fake.calls.length]).toEqual([1, 1]);
  });

  it('gives up after `retries` attempts', async () => {
    const { fake, c } = client([refused(), refused(), refused(), json(200, SESSION)]);
    await expect(c.getSession('s1')).rejects.toBeInstanceOf(ConnectionError);
    expect(fake.calls).toHaveLength(3);
  });

  it('delete: a 404 after a retried attempt means the earlier attempt deleted it; a first 404 is an error', async () => {
    const retried = client([refused(), problem(404, 'session-not-found')]);
    await expect(retried.c.deleteSession('s1')).resolves.toBeUndefined();
    const first = client([problem(404, 'session-not-found')]);
    await expect(first.c.deleteSession('s1')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('streaming exec', () => {
  const lines = (events: object[]): string => events.map((e) => JSON.stringify(e) + '\n').join('');
  const exit = {
    type: 'exit',
    exitCode: 3,
    durationMs: 1,
    truncated: false,
    timedOut: false,
    shellReset: false,
  };

  it('yields events split anywhere across chunks, multi-byte characters included, ending with exit', async () => {
    const text = lines([{ type: 'stdout', data: 'héllo ✓\n', encoding: 'utf-8' }, exit]);
    const bytes = enc(text);
    const chunks = Array.from({ length: bytes.length }, (_, i) => bytes.slice(i, i + 1));
    const { c } = client([{ status: 200, chunks, headers: { 'content-type': 'application/x-ndjson' } }]);
    const events: ExecStreamEvent[] = [];
    for await (const ev of c.execStream('s1', { command: 'x' })) events.push(ev);
    expect(events).toEqual([{ type: 'stdout', data: 'héllo ✓\n', encoding: 'utf-8' }, exit]);
  });

  it('throws ProtocolError when the stream ends without its exit event', async () => {
    const { c } = client([
      { status: 200, chunks: [enc(lines([{ type: 'stdout', data: 'a', encoding: 'utf-8' }]))] },
    ]);
    const seen: string[] = [];
    const run = async (): Promise<void> => {
      for await (const ev of c.execStream('s1', { command: 'x' })) seen.push(ev.type);
    };
    await expect(run()).rejects.toThrow(/ended without an exit event/);
    expect(seen).toEqual(['stdout']);
  });

  it('refuses a line above the bound and stops the download', async () => {
    const big = new Uint8Array(5 * 1024 * 1024).fill(0x61);
    const { fake, c } = client([{ status: 200, chunks: [big, enc('\n')] }]);
    await expect(c.execStream('s1', { command: 'x' }).next()).rejects.toBeInstanceOf(ProtocolError);
    expect(fake.cancelled).toBe(true);
  });

  it('stops the download when the consumer breaks out early', async () => {
    const out = { type: 'stdout', data: 'x', encoding: 'utf-8' };
    const { fake, c } = client([
      { status: 200, chunks: [enc(lines([out])), enc(lines([out])), enc(lines([exit]))] },
    ]);
    for await (const ev of c.execStream('s1', { command: 'x' })) if (ev.type === 'stdout') break;
    expect(fake.cancelled).toBe(true);
  });

  it('execStreamTo hands bytes-with-encoding to a callback and returns the exit event', async () => {
    const b64 = { type: 'stderr', data: 'AP8=', encoding: 'base64' };
    const { c } = client([{ status: 200, chunks: [enc(lines([b64, exit]))] }]);
    const got: number[][] = [];
    const end = await c.execStreamTo('s1', { command: 'x' }, (_s, data, encoding) => {
      got.push([...decodeOutput(data, encoding)]);
    });
    expect([got, end.exitCode]).toEqual([[[0, 255]], 3]);
  });
});

describe('waitUntilReady', () => {
  it('polls until Ready', async () => {
    const pending = { ...SESSION, ready: false, reason: 'PodPending' };
    const { fake, c } = client([json(200, pending), json(200, SESSION)]);
    expect((await c.waitUntilReady('s1', { intervalMs: 1 })).ready).toBe(true);
    expect(fake.calls).toHaveLength(2);
  });

  it('times out with the last reason, and fails at once for an unknown session', async () => {
    const pending = { ...SESSION, ready: false, reason: 'ImagePullFailed', message: 'no such image' };
    const { c } = client([json(200, pending), json(200, pending), json(200, pending)]);
    await expect(c.waitUntilReady('s1', { intervalMs: 5, timeoutMs: 8 })).rejects.toThrow(
      /not ready after 0 s: ImagePullFailed: no such image/,
    );
    const nf = client([problem(404, 'session-not-found')]);
    await expect(nf.c.waitUntilReady('s1')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('output bytes', () => {
  it('decodes base64 output to the exact bytes and utf-8 output to its UTF-8 bytes', () => {
    const r = { stdout: 'AAEC/w==', stdoutEncoding: 'base64' } as ExecResult;
    expect([...stdoutBytes(r)]).toEqual([0, 1, 2, 255]);
    expect([...decodeOutput('é', 'utf-8')]).toEqual([0xc3, 0xa9]);
  });
});
