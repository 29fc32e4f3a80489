/**
 * Browser previews through the gateway (ADR 0032): links made with an API key, exchanged on the
 * preview's own origin for a cookie, requests proxied to a server "in the sandbox" (on the test
 * host, the sessions' pod IP being 127.0.0.1). Hosts are sent as a browser on that origin would.
 */
import type http from 'node:http';

import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';

import { KEYS, auth } from '../../helpers/app.js';
import { startPreviewApp, previewHost, send, type PreviewApp } from '../../helpers/preview-app.js';
import { startSandboxServer, type SandboxServer } from '../../helpers/sandbox-server.js';
import { kubeExec, ready, session, uid } from '../../helpers/sessions.js';

interface Seen {
  url: string;
  headers: http.IncomingHttpHeaders;
}

describe('previews', () => {
  let g: PreviewApp;
  let sandbox: SandboxServer;
  let port: number;
  const seen: Seen[] = [];

  beforeAll(async () => {
    g = await startPreviewApp();
    sandbox = await startSandboxServer((req, res) => {
      seen.push({ url: req.url ?? '', headers: req.headers });
      res.writeHead(200, { 'content-type': 'text/plain', 'set-cookie': 'app=1; Path=/' });
      res.end(`sandbox ${req.method} ${req.url}`);
    });
    port = sandbox.port;
  });
  afterAll(async () => {
    await sandbox.close();
    await g.close();
  });
  beforeEach(() => {
    g.clock.offsetMs = 0;
    g.store.put(session('demo', 'team-a', ready('127.0.0.1')));
    g.store.put(session('other', 'team-b', ready('127.0.0.1')));
  });

  /** Makes a link with `key` (201 expected) and returns its URL's path and query and its host. */
  const link = async (
    name = 'demo',
    key = KEYS.a,
    body: Record<string, unknown> = {},
    ns = '',
  ): Promise<{ host: string; path: string; expiresAt: string }> => {
    const res = await fetch(`${g.url}/v1/sessions/${name}/previews${ns}`, {
      method: 'POST',
      headers: { ...auth(key), 'content-type': 'application/json' },
      body: JSON.stringify({ port, ...body }),
    });
    const answer = (await res.json()) as { url: string; origin: string; expiresAt: string };
    expect(res.status).toBe(201);
    const url = new URL(answer.url);
    expect(answer.origin).toBe(`http://${url.host}`);
    return { host: url.host, path: url.pathname + url.search, expiresAt: answer.expiresAt };
  };

  /** Opens a link as a browser does: the cookie it sets, from its 303. */
  const open = async (l: { host: string; path: string }): Promise<string> => {
    const res = await send(g, { host: l.host, path: l.path });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/');
    const cookie = res.headers['set-cookie']?.[0] ?? '';
    expect(cookie).toMatch(/^sandbox-preview=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    return cookie.split(';')[0]!;
  };

  it('a link sets a cookie for its own origin, and the preview is then served from there', async () => {
    const l = await link();
    expect(l.host).toBe(previewHost(port, 'demo', 'team-a'));
    const cookie = await open(l);
    const res = await send(g, {
      host: l.host,
      path: '/app/page?x=1',
      headers: { cookie: `${cookie}; theme=dark` },
    });
    expect(res.status).toBe(200);
    expect(res.body).toBe('sandbox GET /app/page?x=1');
    // The origin belongs to the sandbox: its own cookies pass both ways.
    expect(res.headers['set-cookie']).toEqual(['app=1; Path=/']);
  });

  it('SECURITY: the sandbox server never sees the preview cookie, the link token or an API key', async () => {
    const l = await link();
    const cookie = await open(l);
    const token = cookie.slice(cookie.indexOf('=') + 1);
    seen.length = 0;
    await send(g, { host: l.host, path: '/', headers: { cookie: `a=1; ${cookie}; b=2` } });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers.cookie).toBe('a=1; b=2');
    expect(JSON.stringify(seen)).not.toContain(token);
    expect(JSON.stringify(seen)).not.toContain(KEYS.a);
  });

  it("SECURITY: a link or cookie fails on another session's origin", async () => {
    const l = await link();
    const cookie = await open(l);
    g.store.put(session('second', 'team-a', ready('127.0.0.1')));
    const elsewhere = previewHost(port, 'second', 'team-a');
    const viaLink = await send(g, { host: elsewhere, path: l.path });
    expect(viaLink.status).toBe(401);
    expect(JSON.parse(viaLink.body)).toMatchObject({
      type: 'https://sandbox.dev/problems/preview-unauthorized',
      detail: expect.stringContaining('for another origin'),
    });
    const viaCookie = await send(g, { host: elsewhere, path: '/', headers: { cookie } });
    expect(viaCookie.status).toBe(401);
    // Another port of the same session is another origin too.
    const otherPort = await send(g, {
      host: previewHost(port + 1, 'demo', 'team-a'),
      path: '/',
      headers: { cookie },
    });
    expect(otherPort.status).toBe(401);
  });

  it('SECURITY: a link and its cookie fail once expired', async () => {
    const l = await link('demo', KEYS.a, { ttlSeconds: 30 });
    const cookie = await open(l);
    g.clock.offsetMs = 31_000;
    const res = await send(g, { host: l.host, path: l.path });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body).detail).toMatch(/link has expired/);
    const again = await send(g, { host: l.host, path: '/', headers: { cookie } });
    expect(again.status).toBe(401);
    expect(JSON.parse(again.body).detail).toMatch(/cookie has expired/);
  });

  it('SECURITY: deleting the session revokes its links, also once a session of that name is back', async () => {
    const l = await link();
    const cookie = await open(l);
    g.store.remove('team-a', 'demo');
    expect((await send(g, { host: l.host, path: '/', headers: { cookie } })).status).toBe(410);
    g.store.put(session('demo', 'team-a', ready('127.0.0.1'), uid('uid-demo-2')));
    const res = await send(g, { host: l.host, path: '/', headers: { cookie } });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body).detail).toMatch(/earlier session demo, since deleted/);
    expect((await send(g, { host: l.host, path: l.path })).status).toBe(401);
  });

  it('SECURITY: another tenant gets no link to a session it cannot see', async () => {
    const res = await fetch(`${g.url}/v1/sessions/demo/previews?namespace=team-a`, {
      method: 'POST',
      headers: { ...auth(KEYS.b), 'content-type': 'application/json' },
      body: JSON.stringify({ port }),
    });
    expect(res.status).toBe(403);
    // Its own sessions it gets; such a link does not open the first tenant's session.
    const theirs = await link('other', KEYS.b);
    const cookie = await open(theirs);
    const res2 = await send(g, { host: previewHost(port, 'demo', 'team-a'), path: '/', headers: { cookie } });
    expect(res2.status).toBe(401);
  });

  it('SECURITY: nothing on a preview origin reaches the API or the console', async () => {
    const l = await link();
    const cookie = await open(l);
    seen.length = 0;
    // With an API key, on the preview's host: the sandbox's server answers, not the gateway's API.
    const api = await send(g, { host: l.host, path: '/v1/sessions', headers: { ...auth(KEYS.a), cookie } });
    expect(api.body).toBe('sandbox GET /v1/sessions');
    expect(seen[0]!.headers.authorization).toBeUndefined();
    const noCookie = await send(g, { host: l.host, path: '/console/', headers: auth(KEYS.a) });
    expect(noCookie.status).toBe(401);
    expect(noCookie.body).not.toContain('<html');
    // A host under the preview domain that names no preview is 404, whatever its path.
    const invalid = await send(g, { host: `console.preview.test`, path: '/healthz' });
    expect(invalid.status).toBe(404);
    // On the API's own host, the internal preview path is no preview.
    expect((await send(g, { host: `127.0.0.1:${g.port}`, path: '/__sandbox-preview/' })).status).toBe(404);
  });

  it('refuses links for forbidden ports, KubernetesExec sessions and unknown sessions; previews off: 404', async () => {
    const post = (name: string, body: unknown): Promise<Response> =>
      fetch(`${g.url}/v1/sessions/${name}/previews`, {
        method: 'POST',
        headers: { ...auth(KEYS.a), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post('demo', { port: 8090 })).status).toBe(403);
    expect((await post('demo', { port: 80 })).status).toBe(403);
    expect((await post('demo', { port: 8000, extra: 1 })).status).toBe(400);
    expect((await post('nope', { port: 8000 })).status).toBe(404);
    g.store.put(session('kx', 'team-a', ready('127.0.0.1'), kubeExec));
    expect((await post('kx', { port: 8000 })).status).toBe(501);
    const off = await startPreviewApp({ GATEWAY_PREVIEW_DOMAIN: '' });
    try {
      off.store.put(session('demo', 'team-a', ready('127.0.0.1')));
      const res = await fetch(`${off.url}/v1/sessions/demo/previews`, {
        method: 'POST',
        headers: { ...auth(KEYS.a), 'content-type': 'application/json' },
        body: JSON.stringify({ port: 8000 }),
      });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/GATEWAY_PREVIEW_DOMAIN/);
    } finally {
      await off.close();
    }
  });

  it('caps the lifetime at the configured maximum', async () => {
    const before = Date.now();
    const l = await link('demo', KEYS.a, { ttlSeconds: 86400 });
    const ttl = (Date.parse(l.expiresAt) - before) / 1000;
    expect(ttl).toBeGreaterThan(500);
    expect(ttl).toBeLessThanOrEqual(601);
  });

  it('relays WebSockets from its own origin only', async () => {
    const l = await link();
    const cookie = await open(l);
    const wsUrl = `ws://127.0.0.1:${g.port}/echo`;
    const ws = new WebSocket(wsUrl, { headers: { host: l.host, cookie, origin: `http://${l.host}` } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send('hi');
    const echo = await new Promise<string>((resolve) =>
      ws.once('message', (d: Buffer) => resolve(d.toString('utf8'))),
    );
    expect(echo).toBe('hi');
    ws.close();
    const foreign = new WebSocket(wsUrl, {
      headers: { host: l.host, cookie, origin: 'http://evil.example' },
    });
    const status = await new Promise<number>((resolve) =>
      foreign.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status).toBe(403);
    const noCookie = new WebSocket(wsUrl, { headers: { host: l.host, origin: `http://${l.host}` } });
    const status2 = await new Promise<number>((resolve) =>
      noCookie.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status2).toBe(401);
  });
});
