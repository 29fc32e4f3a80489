/**
 * GET /v1/sessions/{name}/pty through the gateway to a real agent's terminal (the sandbox-pty
 * helper compiled from the image's C source with the host's gcc): resize and exit status pass
 * through, refusals are HTTP problems before the upgrade, bad control messages close with 1008.
 */
import net from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';

import { KEYS } from '../../helpers/app.js';
import { buildPtyHelper, startAgentApp, type AgentApp } from '../../helpers/agent-app.js';

/** A terminal client: collects the bytes and text messages, waits for text in the output. */
class Term {
  bytes = '';
  texts: string[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) this.bytes += data.toString('utf8');
      else this.texts.push(data.toString('utf8'));
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }
  async waitFor(pattern: RegExp): Promise<RegExpMatchArray> {
    for (let i = 0; i < 200; i++) {
      const m = pattern.exec(this.bytes);
      if (m) return m;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no ${String(pattern)} in terminal output: ${JSON.stringify(this.bytes.slice(-500))}`);
  }
}

/** Opens the terminal; resolves with the client, or rejects with the HTTP status and body. */
function open(url: string, key = KEYS.a, path = '/v1/sessions/demo/pty'): Promise<Term> {
  const ws = new WebSocket(url.replace('http', 'ws') + path, { headers: { authorization: `Bearer ${key}` } });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(new Term(ws)));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body })),
      );
    });
    ws.once('error', reject);
  });
}

describe('terminal through the gateway', () => {
  let g: AgentApp;
  beforeAll(async () => {
    g = await startAgentApp({ ptyHelperPath: await buildPtyHelper() });
  });
  afterAll(async () => {
    await g.close();
  });

  it('runs bash -i: stty size after a resize, then exit 3 ends with the exit message and 1000', async () => {
    const t = await open(g.url);
    t.ws.send(JSON.stringify({ type: 'resize', cols: 100, rows: 30 }));
    t.ws.send(Buffer.from('stty size; echo MARK$((6*7))\n'), { binary: true });
    await t.waitFor(/30 100\r?\n.*MARK42/s);
    t.ws.send(Buffer.from('exit 3\n'), { binary: true });
    const closed = await t.closed;
    expect(closed.code).toBe(1000);
    expect(t.texts.map((x) => JSON.parse(x) as unknown)).toEqual([{ type: 'exit', exitCode: 3 }]);
  });

  it('closes with 1008 on a control message outside the contract', async () => {
    const t = await open(g.url);
    t.ws.send(JSON.stringify({ type: 'resize', cols: 0, rows: 30 }));
    const closed = await t.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toContain('invalid control message');
  });

  it('refuses before the upgrade: no key 401, other tenant 403/404, unknown session 404, plain GET 426', async () => {
    const status = (p: Promise<unknown>): Promise<unknown> =>
      p.then(
        () => 'opened',
        (e: { status?: number; body?: string }) => ({
          status: e.status,
          type: (JSON.parse(e.body ?? '{}') as { type?: string }).type,
        }),
      );
    expect(await status(open(g.url, 'wrong-key'))).toEqual({
      status: 401,
      type: 'https://sandbox.dev/problems/unauthorized',
    });
    expect(await status(open(g.url, KEYS.b))).toEqual({
      status: 404,
      type: 'https://sandbox.dev/problems/session-not-found',
    });
    expect(await status(open(g.url, KEYS.b, '/v1/sessions/demo/pty?namespace=team-a'))).toEqual({
      status: 403,
      type: 'https://sandbox.dev/problems/forbidden',
    });
    expect(await status(open(g.url, KEYS.a, '/v1/sessions/nope/pty'))).toEqual({
      status: 404,
      type: 'https://sandbox.dev/problems/session-not-found',
    });
    expect(await status(open(g.url, KEYS.a, '/v1/sessions/demo/pty?cols=0'))).toEqual({
      status: 400,
      type: 'https://sandbox.dev/problems/invalid-request',
    });
    const plain = await fetch(`${g.url}/v1/sessions/demo/pty`, {
      headers: { authorization: `Bearer ${KEYS.a}` },
    });
    expect(plain.status).toBe(426);
    expect(plain.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});

/** Sends a raw upgrade request and resolves with what came back once the server closed the socket. */
function rawUpgrade(url: string, key: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let got = '';
    socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
    socket.write(
      'GET /v1/sessions/demo/pty HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\n' +
        `sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\nauthorization: Bearer ${key}\r\n\r\n`,
    );
  });
}

describe('refused upgrades', () => {
  let g: AgentApp;
  beforeAll(async () => {
    g = await startAgentApp();
  });
  afterAll(async () => {
    await g.close();
  });

  // Upgraded sockets are outside node:http's timeouts: a refused one must be closed by the server,
  // or a client could hold any number of them open.
  it('closes the socket of an upgrade refused by authentication (the client keeps it open)', async () => {
    const answer = await rawUpgrade(g.url, 'wrong-key');
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  });
});

describe('terminal without the helper in the image', () => {
  let g: AgentApp;
  beforeAll(async () => {
    g = await startAgentApp({ ptyHelperPath: '/nonexistent/sandbox-pty' });
  });
  afterAll(async () => {
    await g.close();
  });

  it("passes the agent's 503 pty-unavailable through as the HTTP answer", async () => {
    const err = await open(g.url).then(
      () => undefined,
      (e: { status?: number; body?: string }) => e,
    );
    expect(err?.status).toBe(503);
    expect(JSON.parse(err?.body ?? '{}')).toMatchObject({
      type: 'https://sandbox.dev/problems/pty-unavailable',
    });
  });
});
