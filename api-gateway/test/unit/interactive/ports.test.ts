/**
 * The port route: HTTP and WebSocket requests to a server in the sandbox (here a server on the
 * test host, the session's pod IP being 127.0.0.1), through the gateway in front of a real agent.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';

import { KEYS, auth } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { startSandboxServer, type SandboxServer } from '../../helpers/sandbox-server.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe('port route', () => {
  let g: AgentApp;
  let sandbox: SandboxServer;
  let port: number;
  const seen: Seen[] = [];

  beforeAll(async () => {
    g = await startAgentApp();
    sandbox = await startSandboxServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        if (req.url?.startsWith('/slow')) return; // never answers
        res.writeHead(200, { 'content-type': 'text/plain', connection: 'keep-alive', 'x-app': 'yes' });
        res.end(`${req.method} ${req.url} ${body}`);
      });
    });
    port = sandbox.port;
  });
  afterAll(async () => {
    await sandbox.close();
    await g.close();
  });

  const url = (path: string, p: number | string = port): string =>
    `${g.url}/v1/sessions/demo/ports/${p}${path}`;

  it('forwards path, query, method and body; strips the API key and hop-by-hop headers both ways', async () => {
    const res = await fetch(url('/some/dir/?q=1&namespace=x'), {
      method: 'POST',
      headers: {
        ...auth(KEYS.a),
        'content-type': 'text/plain',
        'x-custom': 'kept',
        'proxy-authorization': 'Basic eA==',
      },
      body: 'hello',
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('POST /some/dir/?q=1&namespace=x hello');
    expect(res.headers.get('x-app')).toBe('yes');
    const s = seen.at(-1)!;
    expect(s.headers.authorization).toBeUndefined();
    expect(s.headers['proxy-authorization']).toBeUndefined();
    expect(s.headers['x-custom']).toBe('kept');
    expect(s.headers['x-forwarded-prefix']).toBe(`/v1/sessions/demo/ports/${port}`);
    expect(s.headers.host).toBe(`127.0.0.1:${port}`);
    // The API key appears nowhere in what the sandbox's server received.
    expect(JSON.stringify(s)).not.toContain(KEYS.a);
  });

  it('serves the root with and without a trailing slash', async () => {
    expect(await (await fetch(url(''), { headers: auth(KEYS.a) })).text()).toBe('GET / ');
    expect(await (await fetch(url('/'), { headers: auth(KEYS.a) })).text()).toBe('GET / ');
  });

  it('relays WebSocket messages (text and binary) both ways', async () => {
    const ws = new WebSocket(url('/echo').replace('http', 'ws'), { headers: auth(KEYS.a) });
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    const got: Array<{ data: string; isBinary: boolean }> = [];
    const two = new Promise<void>((r) =>
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        got.push({ data: data.toString(), isBinary });
        if (got.length === 2) r();
      }),
    );
    ws.send('text message');
    ws.send(Buffer.from('binary message'), { binary: true });
    await two;
    expect(got).toEqual([
      { data: 'text message', isBinary: false },
      { data: 'binary message', isBinary: true },
    ]);
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.close(1000);
    expect(await closed).toBe(1000);
  });

  it('answers bad ports with problem+json: 0, 65536, non-numeric 400; the agent port 403', async () => {
    for (const p of ['0', '65536', 'http', '-1', '08x']) {
      const res = await fetch(url('/', p), { headers: auth(KEYS.a) });
      expect({ p, status: res.status, ct: res.headers.get('content-type') }).toEqual({
        p,
        status: 400,
        ct: 'application/problem+json; charset=utf-8',
      });
      expect(((await res.json()) as { type: string }).type).toBe(
        'https://sandbox.dev/problems/invalid-request',
      );
    }
    const agentPort = g.app.config.agentPort;
    const res = await fetch(url('/', agentPort), { headers: auth(KEYS.a) });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { type: string }).type).toBe('https://sandbox.dev/problems/port-forbidden');
  });

  it("refuses another tenant's key (404 in its own namespace, 403 for the owner's) and no key (401)", async () => {
    expect((await fetch(url('/'), { headers: auth(KEYS.b) })).status).toBe(404);
    const forbidden = await fetch(url('/'), {
      headers: { ...auth(KEYS.b), 'x-sandbox-namespace': 'team-a' },
    });
    expect(forbidden.status).toBe(403);
    expect(((await forbidden.json()) as { type: string }).type).toBe(
      'https://sandbox.dev/problems/forbidden',
    );
    expect((await fetch(url('/'))).status).toBe(401);
    const before = seen.length;
    const ws = new WebSocket(url('/echo').replace('http', 'ws'), { headers: auth(KEYS.b) });
    const status = await new Promise<number>((r) =>
      ws.once('unexpected-response', (_q, res) => r(res.statusCode ?? 0)),
    );
    ws.on('error', () => undefined);
    ws.terminate();
    expect(status).toBe(404);
    expect(seen.length).toBe(before); // nothing reached the server
  });

  it('answers 502 when nothing listens on the port', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const free = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const res = await fetch(url('/', free), { headers: auth(KEYS.a) });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ type: 'https://sandbox.dev/problems/upstream-error' });
  });
});

describe('port route and a server that closes kept-alive connections', () => {
  let g: AgentApp;
  let server: net.Server;
  let port: number;
  let served = 0;
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    g = await startAgentApp();
    // Answers the first request of each connection with keep-alive, then resets the connection on
    // the next one without answering: what a server closing an idle connection looks like to a
    // client that reused it at that moment.
    server = net.createServer((socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      let requests = 0;
      socket.on('data', (d: Buffer) => {
        if (!d.toString('latin1').includes('\r\n\r\n')) return;
        if (++requests > 1) return void socket.resetAndDestroy();
        served++;
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok');
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    // The gateway first: closing it destroys its kept-alive connections to the server.
    await g.close();
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  // Regression: the bench's port GETs got 502 now and then (a reused connection reset by the server).
  it('sends a bodyless request once more on a new connection when a reused one is reset', async () => {
    const get = (): Promise<Response> =>
      fetch(`${g.url}/v1/sessions/demo/ports/${port}/`, { headers: auth(KEYS.a) });
    expect((await get()).status).toBe(200);
    const second = await get();
    expect(second.status).toBe(200);
    expect(await second.text()).toBe('ok');
    expect(served).toBe(2);
  });
});

describe('port route with a narrowed range', () => {
  let g: AgentApp;
  beforeAll(async () => {
    g = await startAgentApp({ env: { GATEWAY_PROXY_PORT_MIN: '8000', GATEWAY_PROXY_PORT_MAX: '8001' } });
  });
  afterAll(async () => {
    await g.close();
  });

  it('refuses ports outside GATEWAY_PROXY_PORT_MIN..MAX with 403 port-forbidden, before any lookup', async () => {
    const res = await fetch(`${g.url}/v1/sessions/demo/ports/8002/`, { headers: auth(KEYS.a) });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ type: 'https://sandbox.dev/problems/port-forbidden' });
  });
});
