/**
 * The port route's hardening (issue 25), against a server on the test host (the sessions' pod IP
 * is 127.0.0.1): the raw path as received, GET/HEAD bodies refused, 501 for KubernetesExec,
 * cookies dropped unless enabled, a per-API-key upstream socket budget (one tenant holding its
 * budget does not hold up another), an idle timeout on pooled sockets, a per-key WebSocket
 * budget, and the Origin check on upgrades. SECURITY tests; each was shown failing with its
 * protection off (see the commit message).
 */
import type http from 'node:http';
import net, { type Socket } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';

import { KEYS, auth } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { startSandboxServer, type SandboxServer } from '../../helpers/sandbox-server.js';
import { kubeExec, ready, session } from '../../helpers/sessions.js';

/** Waits until `cond` holds (fails after 5 s: what the test waits for, not how fast it comes). */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not within 5 s: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A raw HTTP/1.1 exchange on a fresh connection: the status line, or 'closed'. */
function rawRequest(port: number, head: string, body = ''): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head + body));
    let got = '';
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\r\n')) {
        resolve(got.slice(0, got.indexOf('\r\n')));
        socket.destroy();
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(got ? got.slice(0, got.indexOf('\r\n')) : 'closed'));
  });
}

/** Every client WebSocket opened (terminated after each file's tests). */
const clients: WebSocket[] = [];

/** Opens a WebSocket; resolves with it, or with the refusal's status. */
function upgrade(url: string, headers: Record<string, string>): Promise<WebSocket | number> {
  const ws = new WebSocket(url.replace('http', 'ws'), { headers });
  clients.push(ws);
  return new Promise((resolve) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.on('error', () => undefined);
  });
}

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

describe('port route: what is forwarded', () => {
  let g: AgentApp;
  let sandbox: SandboxServer;
  const seen: Seen[] = [];

  beforeAll(async () => {
    g = await startAgentApp();
    g.store.put(session('kx', 'team-a', ready('127.0.0.1'), kubeExec));
    sandbox = await startSandboxServer((req, res) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
      req.resume();
      req.on('end', () => {
        res.setHeader('set-cookie', 'sandbox=1; Path=/');
        res.end(`${req.method} ${req.url}`);
      });
    });
  });
  afterAll(async () => {
    await sandbox.close();
    await g.close();
  });

  const base = (): string => `/v1/sessions/demo/ports/${sandbox.port}`;
  const gwPort = (): number => Number(new URL(g.url).port);

  it('forwards the path and query as received: %2F, %3F and %25 keep their meaning', async () => {
    const res = await fetch(`${g.url}${base()}/a%2Fb/c%3Fd/%25e?x=%2F&y=%3F`, { headers: auth(KEYS.a) });
    expect(res.status).toBe(200);
    expect(seen.at(-1)!.url).toBe('/a%2Fb/c%3Fd/%25e?x=%2F&y=%3F');
    // Encoded characters in the route's own segments do not shift the sandbox's path.
    const enc = await fetch(`${g.url}/v1/sessions/de%6Do/ports/${sandbox.port}/z%2F`, {
      headers: auth(KEYS.a),
    });
    expect([enc.status, seen.at(-1)!.url]).toEqual([200, '/z%2F']);
  });

  it('never answers 500 for odd characters in the path', async () => {
    const paths = [
      '/%zz',
      '/%',
      '/%00',
      '/%0a',
      '/%20x',
      '/%7f',
      '/%e2%82%ac',
      '/%c3%28',
      '/\u00e9',
      '/a b',
      '/..%2f..%2fetc',
      '/\'"<>',
      '/\\x',
    ];
    for (const p of paths) {
      const line = await rawRequest(
        gwPort(),
        `GET ${base()}${p} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.a}\r\nConnection: close\r\n\r\n`,
      );
      expect({ p, line }).toEqual({ p, line: expect.stringMatching(/^HTTP\/1\.1 [234]\d\d /) as unknown });
    }
  });

  it('refuses GET and HEAD with a body (400), sending nothing upstream', async () => {
    const before = seen.length;
    const cases = [
      `GET ${base()}/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.a}\r\nContent-Length: 5\r\n\r\nhello`,
      `HEAD ${base()}/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.a}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
    ];
    for (const head of cases) expect(await rawRequest(gwPort(), head)).toBe('HTTP/1.1 400 Bad Request');
    expect(seen.length).toBe(before);
    // A GET with Content-Length: 0 is no body.
    const zero = `GET ${base()}/z HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.a}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;
    expect(await rawRequest(gwPort(), zero)).toBe('HTTP/1.1 200 OK');
  });

  it('answers 501 not-supported for a KubernetesExec session, dialing nothing', async () => {
    const before = seen.length;
    const res = await fetch(`${g.url}/v1/sessions/kx/ports/${sandbox.port}/`, { headers: auth(KEYS.a) });
    expect(res.status).toBe(501);
    expect(((await res.json()) as { type: string }).type).toBe('https://sandbox.dev/problems/not-supported');
    expect(seen.length).toBe(before);
  });

  it('drops Cookie and Set-Cookie by default', async () => {
    const res = await fetch(`${g.url}${base()}/c`, { headers: { ...auth(KEYS.a), cookie: 'gw=secret' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(seen.at(-1)!.headers.cookie).toBeUndefined();
  });
});

describe('port route: cookies when enabled', () => {
  let g: AgentApp;
  let sandbox: SandboxServer;
  let cookie: string | undefined;
  beforeAll(async () => {
    g = await startAgentApp({ env: { GATEWAY_PORT_PROXY_FORWARD_COOKIES: 'true' } });
    sandbox = await startSandboxServer((req, res) => {
      cookie = req.headers.cookie;
      res.setHeader('set-cookie', 'sandbox=1; Path=/');
      res.end('ok');
    });
  });
  afterAll(async () => {
    await sandbox.close();
    await g.close();
  });

  it('GATEWAY_PORT_PROXY_FORWARD_COOKIES=true passes both', async () => {
    const res = await fetch(`${g.url}/v1/sessions/demo/ports/${sandbox.port}/`, {
      headers: { ...auth(KEYS.a), cookie: 'app=1' },
    });
    expect([res.status, res.headers.get('set-cookie'), cookie]).toEqual([200, 'sandbox=1; Path=/', 'app=1']);
  });
});

describe('port route: per-key upstream budget and idle timeout', () => {
  let g: AgentApp;
  let sandbox: SandboxServer;
  const held: http.ServerResponse[] = [];
  /** Connections the server accepted, and how many of them are closed. */
  const conns = { opened: 0, closed: 0 };

  beforeAll(async () => {
    g = await startAgentApp({
      env: {
        GATEWAY_PORT_PROXY_MAX_SOCKETS_PER_KEY: '2',
        GATEWAY_PORT_PROXY_IDLE_TIMEOUT_SECONDS: '1',
        GATEWAY_CONNECT_TIMEOUT_MS: '60000',
      },
    });
    sandbox = await startSandboxServer((req, res) => {
      req.resume();
      if (req.url?.startsWith('/hold')) return void held.push(res);
      res.end('ok');
    });
    sandbox.server.on('connection', (s: Socket) => {
      conns.opened++;
      s.once('close', () => conns.closed++);
    });
  });
  afterAll(async () => {
    for (const r of held) r.end();
    await sandbox.close();
    await g.close();
  });

  it("a key holding its whole budget queues only its own requests: another key's are served", async () => {
    const a = [1, 2, 3].map((i) =>
      fetch(`${g.url}/v1/sessions/demo/ports/${sandbox.port}/hold/${i}`, { headers: auth(KEYS.a) }),
    );
    await until(() => held.length === 2, "two of A's requests reach the server");
    // Tenant B (session `other`, same server) is answered while A holds its two sockets.
    const b = await fetch(`${g.url}/v1/sessions/other/ports/${sandbox.port}/ok`, { headers: auth(KEYS.b) });
    expect([b.status, await b.text()]).toEqual([200, 'ok']);
    expect(held.length).toBe(2); // A's third waits for one of A's own sockets
    held.shift()!.end('done');
    await until(() => held.length === 2, "A's third request gets the freed socket");
    for (const r of held.splice(0)) r.end('done');
    expect((await Promise.all(a)).map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('closes pooled upstream sockets once idle for the idle timeout (1 s here)', async () => {
    const res = await fetch(`${g.url}/v1/sessions/demo/ports/${sandbox.port}/idle`, {
      headers: auth(KEYS.a),
    });
    expect(res.status).toBe(200);
    // Every connection the gateway opened (A's two, B's one, this one on a kept socket) ends idle.
    await until(() => conns.opened > 0 && conns.closed === conns.opened, 'every upstream socket closed');
  });
});

describe('port route: per-key WebSocket budget; Origin of every upgrade', () => {
  let g: AgentApp;
  let sandbox: SandboxServer;
  let upgrades = 0;
  beforeAll(async () => {
    g = await startAgentApp({
      env: { GATEWAY_PORT_PROXY_MAX_SOCKETS_PER_KEY: '1', GATEWAY_ALLOWED_ORIGINS: 'https://app.example' },
    });
    sandbox = await startSandboxServer((_req, res) => res.end('ok'));
    sandbox.server.on('upgrade', () => upgrades++);
  });
  afterAll(async () => {
    for (const c of clients) c.terminate();
    await sandbox.close();
    await g.close();
  });

  const ws = (name = 'demo'): string => `${g.url}/v1/sessions/${name}/ports/${sandbox.port}/ws`;

  it("a key's WebSockets beyond its budget are refused (429); another key still opens one", async () => {
    const first = await upgrade(ws(), auth(KEYS.a));
    expect(first).toBeInstanceOf(WebSocket);
    expect(await upgrade(ws(), auth(KEYS.a))).toBe(429);
    const other = await upgrade(ws('other'), auth(KEYS.b));
    expect(other).toBeInstanceOf(WebSocket);
    // Closing the first gives its place back.
    const closed = new Promise((r) => (first as WebSocket).once('close', r));
    (first as WebSocket).close(1000);
    await closed;
    // The place is given back when the gateway's upstream socket has closed too.
    let again: WebSocket | number = 429;
    for (let i = 0; i < 100 && again === 429; i++) {
      again = await upgrade(ws(), auth(KEYS.a));
      if (again === 429) await new Promise((r) => setTimeout(r, 50));
    }
    expect(again).toBeInstanceOf(WebSocket);
    for (const s of [other, again]) (s as WebSocket).close(1000);
  });

  it('refuses a foreign Origin with 403 before dialing (ports and terminal); allows none, same-origin, listed', async () => {
    const before = upgrades;
    for (const url of [ws(), `${g.url}/v1/sessions/demo/pty`]) {
      for (const origin of ['https://evil.example', 'null', 'http://127.0.0.1:1']) {
        expect({ url, origin, got: await upgrade(url, { ...auth(KEYS.a), origin }) }).toEqual({
          url,
          origin,
          got: 403,
        });
      }
    }
    expect(upgrades).toBe(before);
    for (const origin of [undefined, new URL(g.url).origin, 'https://app.example']) {
      const s = await upgrade(ws(), { ...auth(KEYS.a), ...(origin ? { origin } : {}) });
      expect({ origin, open: s instanceof WebSocket }).toEqual({ origin, open: true });
      const closed = new Promise((r) => (s as WebSocket).once('close', r));
      (s as WebSocket).close(1000);
      await closed;
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});

describe('bodies that never finish end in 408 (port route and /mcp), never 502', () => {
  let g: AgentApp;
  let sandbox: SandboxServer;
  let bytes = 0;
  beforeAll(async () => {
    g = await startAgentApp({
      env: { GATEWAY_HEADERS_TIMEOUT_SECONDS: '1', GATEWAY_REQUEST_TIMEOUT_SECONDS: '2' },
    });
    // A server that reads the body as it comes and answers at its end (never, here).
    sandbox = await startSandboxServer((req, res) => {
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.on('end', () => res.end('ok'));
    });
  });
  afterAll(async () => {
    await sandbox.close();
    await g.close();
  });

  it('a stalled POST to a port and a stalled /mcp body each get 408', async () => {
    const gwPort = Number(new URL(g.url).port);
    const stalled = (head: string): Promise<string> =>
      new Promise((resolve) => {
        const socket = net.connect(gwPort, '127.0.0.1', () => socket.write(head + 'x'.repeat(1000)));
        let got = '';
        socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
        socket.on('error', () => undefined);
        socket.on('close', () => resolve(got.slice(0, got.indexOf('\r\n')) || 'closed'));
      });
    const auth = `Authorization: Bearer ${KEYS.a}\r\nHost: x\r\nContent-Length: 100000\r\n`;
    const answers = await Promise.all([
      stalled(`POST /v1/sessions/demo/ports/${sandbox.port}/up HTTP/1.1\r\n${auth}\r\n`),
      stalled(`POST /mcp HTTP/1.1\r\n${auth}Content-Type: application/json\r\n\r\n`),
    ]);
    expect(answers).toEqual(['HTTP/1.1 408 Request Timeout', 'HTTP/1.1 408 Request Timeout']);
    expect(bytes).toBe(1000); // the port's server got what was sent, then the caller was cut
  });
});
