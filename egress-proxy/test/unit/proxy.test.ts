/**
 * The proxy between a real client and real upstream servers on loopback: allowed and denied hosts
 * for plain HTTP and CONNECT, SNI checked against the CONNECT host, methods and paths, injected
 * headers never seen by the client, a runtime rule change closing an open tunnel, and blocked
 * addresses. The session resolver is a fake (the client's address is the sandbox's).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { lookup as dnsLookup } from 'node:dns';
import { Agent, createServer, request, type Server } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { connect as netConnect, type AddressInfo, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

import type { AuditEvent } from '@sandbox-platform/api';

import { blockList, filteringLookup } from '../../src/dial.js';
import { EgressProxy } from '../../src/proxy.js';
import type { EgressRule } from '../../src/rules.js';
import type { SandboxIdentity } from '../../src/sessions.js';

const SESSION: SandboxIdentity = { namespace: 'team-a', name: 's1', uid: 'u1' };
/** Test names resolve to loopback; `meta.test` to a blocked address. */
const fakeResolve = ((host: string, opts: object, cb: (e: Error | null, a: unknown) => void) =>
  host.endsWith('.test')
    ? cb(null, [{ address: host === 'meta.test' ? '127.0.0.99' : '127.0.0.1', family: 4 }])
    : dnsLookup(host, { ...opts, all: true }, cb)) as unknown as typeof dnsLookup;

describe('egress proxy', () => {
  let upstream: Server;
  let upPort: number;
  let proxy: EgressProxy;
  let proxyPort: number;
  let rules: EgressRule[] = [];
  const audit: AuditEvent[] = [];
  const seen: Array<{ method?: string; url?: string; headers: Record<string, unknown> }> = [];

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      seen.push({ method: req.method, url: req.url, headers: req.headers });
      res.end(`hello ${req.url}`);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    upPort = (upstream.address() as AddressInfo).port;
    const lookup = filteringLookup(blockList(['127.0.0.99/32', '169.254.0.0/16']), fakeResolve);
    proxy = new EgressProxy({
      sessions: { byAddress: (ip) => (ip === '127.0.0.1' ? SESSION : undefined), rules: () => rules },
      audit: (e) => audit.push(e),
      lookup,
      httpAgent: new Agent({ keepAlive: true, lookup }),
      httpsAgent: new HttpsAgent({ keepAlive: true, lookup }),
      secrets: {
        read: async (_ns, name, key) =>
          name === 'creds' && key === 'token' ? 'Bearer s3cret' : Promise.reject(new Error('missing')),
      },
      timeoutMs: 5000,
      helloTimeoutMs: 2000,
      maxTunnelsPerSession: 8,
    });
    await new Promise<void>((r) => proxy.server.listen(0, '127.0.0.1', r));
    proxyPort = (proxy.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    proxy.server.closeAllConnections();
    upstream.closeAllConnections();
    await Promise.all([new Promise((r) => proxy.server.close(r)), new Promise((r) => upstream.close(r))]);
  });

  const viaProxy = (
    url: string,
    method = 'GET',
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const u = new URL(url);
      const req = request(
        {
          host: '127.0.0.1',
          port: proxyPort,
          path: url,
          method,
          headers: { host: u.host, ...headers },
          agent: false,
        },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });

  it('answers an allowed host and refuses another, auditing both', async () => {
    rules = [{ host: 'allowed.test', ports: [upPort] }];
    audit.length = 0;
    const ok = await viaProxy(`http://allowed.test:${upPort}/x`);
    const no = await viaProxy(`http://denied.test:${upPort}/x`);
    expect(ok).toEqual({ status: 200, body: 'hello /x' });
    expect(no.status).toBe(403);
    expect(audit.map((e) => [e.outcome, e.detail.host, e.detail.reason])).toEqual([
      ['allowed', 'allowed.test', null],
      ['denied', 'denied.test', 'no-rule'],
    ]);
    expect(audit[0]!.detail.bytesDown).toBe('hello /x'.length);
  });

  it('checks methods and path prefixes, and refuses dot segments under a prefix', async () => {
    rules = [{ host: 'allowed.test', ports: [upPort], methods: ['GET'], pathPrefixes: ['/simple/'] }];
    expect((await viaProxy(`http://allowed.test:${upPort}/simple/pkg`)).status).toBe(200);
    expect((await viaProxy(`http://allowed.test:${upPort}/simple/pkg`, 'POST')).status).toBe(403);
    expect((await viaProxy(`http://allowed.test:${upPort}/admin`)).status).toBe(403);
    expect((await viaProxy(`http://allowed.test:${upPort}/simple/%2e%2e/admin`)).status).toBe(403);
  });

  it('injects a header from a Secret: the upstream sees it, the client never does', async () => {
    rules = [
      {
        host: 'allowed.test',
        ports: [upPort],
        injectHeaders: [{ name: 'Authorization', secretKeyRef: { name: 'creds', key: 'token' } }],
      },
    ];
    seen.length = 0;
    const r = await viaProxy(`http://allowed.test:${upPort}/api`, 'GET', {
      authorization: 'Bearer from-sandbox',
    });
    expect(r.status).toBe(200);
    expect(seen[0]!.headers.authorization).toBe('Bearer s3cret');
    expect(r.body).not.toContain('s3cret');
  });

  it('refuses a Host header that differs from the URL, and an IP literal', async () => {
    rules = [{ host: 'allowed.test', ports: [upPort] }];
    expect((await viaProxy(`http://allowed.test:${upPort}/`, 'GET', { host: 'denied.test' })).status).toBe(
      400,
    );
    expect((await viaProxy(`http://127.0.0.1:${upPort}/`)).status).toBe(403);
  });

  it('refuses a name that resolves only to a blocked address', async () => {
    rules = [{ host: 'meta.test', ports: [upPort] }];
    expect((await viaProxy(`http://meta.test:${upPort}/`)).status).toBe(403);
  });

  const connectTunnel = (authority: string): Promise<{ status: string; socket: Socket }> =>
    new Promise((resolve, reject) => {
      const s = netConnect(proxyPort, '127.0.0.1', () =>
        s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`),
      );
      s.once('data', (d) => resolve({ status: d.toString().split('\r\n')[0]!, socket: s }));
      s.once('error', reject);
    });

  it('CONNECT: refuses a host no rule allows', async () => {
    rules = [];
    const t = await connectTunnel('denied.test:443');
    expect(t.status).toBe('HTTP/1.1 403 Forbidden');
    t.socket.destroy();
  });

  it('CONNECT: closes a tunnel whose SNI is not the CONNECT host, and one that is not TLS', async () => {
    rules = [{ host: 'allowed.test', ports: [443] }];
    audit.length = 0;
    const t = await connectTunnel('allowed.test:443');
    expect(t.status).toBe('HTTP/1.1 200 Connection Established');
    const tls = tlsConnect({ socket: t.socket, servername: 'denied.test', rejectUnauthorized: false });
    const err = await new Promise<Error>((r) => tls.once('error', r));
    expect(err.message).toMatch(/socket disconnected|ECONNRESET|closed/i);
    const plain = await connectTunnel('allowed.test:443');
    plain.socket.write('SSH-2.0-OpenSSH\r\n');
    await new Promise((r) => plain.socket.once('close', r));
    await new Promise((r) => setTimeout(r, 50));
    expect(audit.map((e) => e.detail.reason)).toEqual(['sni-mismatch', 'not-tls']);
    expect(audit[0]!.detail.sni).toBe('denied.test');
  });

  it('CONNECT: relays an allowed TLS tunnel, and a rule removed at runtime closes it', async () => {
    rules = [{ host: 'allowed.test', ports: [upPort] }];
    audit.length = 0;
    const t = await connectTunnel(`allowed.test:${upPort}`);
    expect(t.status).toBe('HTTP/1.1 200 Connection Established');
    // The upstream is plain HTTP: the TLS handshake fails at the upstream, but the proxy relayed
    // the ClientHello (SNI allowed.test) to it: the tunnel was opened.
    const tls = tlsConnect({ socket: t.socket, servername: 'allowed.test', rejectUnauthorized: false });
    tls.on('error', () => undefined);
    const opened = await new Promise<boolean>((r) => {
      const timer = setTimeout(() => r(true), 300);
      t.socket.once('close', () => {
        clearTimeout(timer);
        r(false);
      });
    });
    if (opened) {
      rules = [];
      expect(proxy.revalidate(SESSION)).toBe(1);
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(
      audit.some(
        (e) => e.outcome === 'allowed' || e.outcome === 'error' || e.detail.reason === 'rule-removed',
      ),
    ).toBe(true);
  });
});

/**
 * Plain HTTP forwarding without pipe or per-request timers: request bodies (sized and chunked)
 * and large answers arrive whole with their bytes counted, a stalled upstream is cut by the shared
 * idle timer while a slow but steady one is not, and every request leaves exactly one record.
 */
describe('egress proxy: bodies, bytes and upstream timeouts', () => {
  const TIMEOUT_MS = 300;
  const BIG = 2 * 1024 * 1024;
  let upstream: Server;
  let upPort: number;
  let proxy: EgressProxy;
  let proxyPort: number;
  let rules: EgressRule[] = [];
  const audit: AuditEvent[] = [];
  const stalled: Array<() => void> = [];

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      if (req.url === '/echo') {
        let n = 0;
        req.on('data', (c: Buffer) => (n += c.length));
        req.on('end', () => res.end(`got ${n}`));
      } else if (req.url === '/big') {
        const chunk = Buffer.alloc(64 * 1024, 'b');
        let sent = 0;
        const more = (): void => {
          while (sent < BIG) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', more);
          }
          res.end();
        };
        more();
      } else if (req.url === '/stall') {
        stalled.push(() => res.destroy());
      } else if (req.url === '/slow') {
        // 8 chunks, one per 100 ms: 800 ms in all, never idle for TIMEOUT_MS.
        let left = 8;
        const timer = setInterval(() => {
          res.write('s');
          if (--left === 0) {
            clearInterval(timer);
            res.end();
          }
        }, 100);
      } else res.end('ok');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    upPort = (upstream.address() as AddressInfo).port;
    const lookup = filteringLookup(blockList([]), fakeResolve);
    proxy = new EgressProxy({
      sessions: { byAddress: () => SESSION, rules: () => rules },
      audit: (e) => audit.push(e),
      lookup,
      httpAgent: new Agent({ keepAlive: true, lookup }),
      httpsAgent: new HttpsAgent({ keepAlive: true, lookup }),
      secrets: { read: () => Promise.reject(new Error('none')) },
      timeoutMs: TIMEOUT_MS,
      helloTimeoutMs: 2000,
      maxTunnelsPerSession: 8,
    });
    await new Promise<void>((r) => proxy.server.listen(0, '127.0.0.1', r));
    proxyPort = (proxy.server.address() as AddressInfo).port;
    rules = [{ host: 'allowed.test', ports: [upPort] }];
  });
  afterAll(async () => {
    for (const s of stalled) s();
    proxy.server.closeAllConnections();
    upstream.closeAllConnections();
    await Promise.all([new Promise((r) => proxy.server.close(r)), new Promise((r) => upstream.close(r))]);
  });

  const send = (
    path: string,
    opts: { method?: string; body?: Buffer[]; chunked?: boolean; abortAfterMs?: number } = {},
  ): Promise<{ status: number; bytes: number; body: string }> =>
    new Promise((resolve, reject) => {
      const url = `http://allowed.test:${upPort}${path}`;
      const size = (opts.body ?? []).reduce((n, b) => n + b.length, 0);
      const req = request(
        {
          host: '127.0.0.1',
          port: proxyPort,
          path: url,
          method: opts.method ?? 'GET',
          headers: {
            host: `allowed.test:${upPort}`,
            ...(opts.body && !opts.chunked ? { 'content-length': String(size) } : {}),
          },
          agent: false,
        },
        (res) => {
          let bytes = 0;
          let body = '';
          res.on('data', (c: Buffer) => {
            bytes += c.length;
            if (body.length < 100) body += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, body }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (opts.abortAfterMs !== undefined) setTimeout(() => req.destroy(), opts.abortAfterMs);
      for (const b of opts.body ?? []) req.write(b);
      req.end();
    });
  const records = async (n: number): Promise<AuditEvent[]> => {
    for (let i = 0; i < 100 && audit.length < n; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 30));
    return audit.splice(0);
  };

  it('forwards a sized and a chunked request body whole, counting bytesUp', async () => {
    audit.length = 0;
    const body = [Buffer.alloc(100_000, 'u'), Buffer.alloc(23, 'v')];
    expect(await send('/echo', { method: 'POST', body })).toMatchObject({ status: 200, body: 'got 100023' });
    expect(await send('/echo', { method: 'PUT', body, chunked: true })).toMatchObject({ body: 'got 100023' });
    expect(await send('/echo', { method: 'POST', body: [] })).toMatchObject({ body: 'got 0' });
    const r = await records(3);
    expect(r.map((e) => [e.outcome, e.detail.method, e.detail.bytesUp, e.detail.bytesDown])).toEqual([
      ['allowed', 'POST', 100_023, 'got 100023'.length],
      ['allowed', 'PUT', 100_023, 'got 100023'.length],
      ['allowed', 'POST', 0, 'got 0'.length],
    ]);
  });

  it('relays a large answer to a slow reader whole, counting bytesDown', async () => {
    audit.length = 0;
    const got = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: proxyPort,
          path: `http://allowed.test:${upPort}/big`,
          headers: { host: `allowed.test:${upPort}` },
          agent: false,
        },
        (res) => {
          let bytes = 0;
          res.pause();
          // Read in bursts so the proxy's writes back up and it must wait for drain.
          const timer = setInterval(() => res.resume(), 5);
          res.on('data', (c: Buffer) => {
            bytes += c.length;
            res.pause();
          });
          res.on('end', () => {
            clearInterval(timer);
            resolve(bytes);
          });
          res.resume();
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(got).toBe(BIG);
    const r = await records(1);
    expect(r.map((e) => [e.outcome, e.detail.status, e.detail.bytesUp, e.detail.bytesDown])).toEqual([
      ['allowed', 200, 0, BIG],
    ]);
  }, 20_000);

  it('cuts an upstream that stalls for the timeout, not one that is slow but steady', async () => {
    audit.length = 0;
    const start = Date.now();
    const stall = await send('/stall');
    const took = Date.now() - start;
    expect(stall.status).toBe(502);
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(took).toBeLessThan(TIMEOUT_MS * 3);
    expect(await send('/slow')).toMatchObject({ status: 200, body: 'ssssssss' });
    const r = await records(2);
    expect(r.map((e) => [e.outcome, e.detail.status, e.detail.reason, e.detail.bytesDown])).toEqual([
      ['allowed', 502, 'upstream-error', 0],
      ['allowed', 200, null, 8],
    ]);
  });

  it('leaves one record for a request its client gave up on before the answer', async () => {
    audit.length = 0;
    await expect(send('/stall', { abortAfterMs: 50 })).rejects.toThrow();
    await new Promise((r) => setTimeout(r, TIMEOUT_MS * 2));
    const r = await records(1);
    expect(r).toHaveLength(1);
    expect(r[0]!.detail).toMatchObject({ path: '/stall', reason: 'upstream-error' });
  });
});
