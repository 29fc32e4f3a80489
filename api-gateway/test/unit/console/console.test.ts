/**
 * /console (ADR 0032): the page and its files, public, with a strict CSP and a fresh nonce per
 * answer; and the terminal's API key taken from a WebSocket subprotocol (a browser cannot set
 * Authorization on a WebSocket), on the terminal route only.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';

import { KEYS } from '../../helpers/app.js';
import { buildPtyHelper, startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { startPreviewApp, type PreviewApp } from '../../helpers/preview-app.js';
import { CONSOLE_PROTOCOL, KEY_PROTOCOL_PREFIX } from '../../../src/console/index.js';

describe('console files', () => {
  let g: PreviewApp;
  beforeAll(async () => {
    g = await startPreviewApp();
  });
  afterAll(async () => {
    await g.close();
  });

  it('redirects /console to console/ (relative: works behind a path prefix)', async () => {
    const res = await fetch(`${g.url}/console`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('console/');
  });

  it('serves the page without a key, with a strict CSP and a fresh nonce each time', async () => {
    const nonces: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${g.url}/console/`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-store');
      const csp = res.headers.get('content-security-policy') ?? '';
      const nonce = /'nonce-([^']+)'/.exec(csp)?.[1] ?? '';
      expect(nonce).toMatch(/^[A-Za-z0-9+/]{24}$/);
      expect(csp).toContain("script-src 'self';");
      expect(csp).not.toMatch(/script-src[^;]*unsafe/);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const html = await res.text();
      expect(html).toContain(`nonce="${nonce}"`);
      expect(html).not.toContain('__CSP_NONCE__');
      nonces.push(nonce);
    }
    expect(nonces[0]).not.toBe(nonces[1]);
  });

  it('serves the files with ETags (304 when unchanged); anything else is 404', async () => {
    const plain = await g.app.inject({ url: '/console/console.js' });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body).toBe('void 0;\n');
    const etag = String(plain.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    const again = await g.app.inject({ url: '/console/console.js', headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    // Gzipped for clients that take it, under an ETag of its own.
    const res = await fetch(`${g.url}/console/console.js`, { headers: { 'accept-encoding': 'gzip, br' } });
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(res.headers.get('vary')).toBe('accept-encoding');
    expect(await res.text()).toBe('void 0;\n');
    expect(res.headers.get('etag')).toBe(etag.replace(/"$/, '-gz"'));
    expect((await fetch(`${g.url}/console/console.css`)).headers.get('content-type')).toBe(
      'text/css; charset=utf-8',
    );
    for (const path of ['/console/index.html', '/console/..%2Fpackage.json', '/console/nope.js']) {
      expect((await fetch(`${g.url}${path}`)).status).toBe(404);
    }
  });
});

/** Opens a WebSocket offering `protocols`; resolves with it, or with the refusal's HTTP status. */
function dial(
  url: string,
  protocols: string[],
  headers: Record<string, string> = {},
): Promise<WebSocket | number> {
  const ws = new WebSocket(url, protocols, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', reject);
  });
}

const keyProtocol = (key: string): string => KEY_PROTOCOL_PREFIX + Buffer.from(key).toString('base64url');

describe('the terminal key in a WebSocket subprotocol', () => {
  let g: AgentApp;
  let base: string;
  beforeAll(async () => {
    g = await startAgentApp({ ptyHelperPath: await buildPtyHelper() });
    base = g.url.replace('http', 'ws');
  });
  afterAll(async () => {
    await g.close();
  });

  it('opens the terminal with the key offered as a subprotocol; the server selects the console protocol', async () => {
    const ws = await dial(`${base}/v1/sessions/demo/pty`, [CONSOLE_PROTOCOL, keyProtocol(KEYS.a)]);
    if (typeof ws === 'number') throw new Error(`refused: ${ws}`);
    expect(ws.protocol).toBe(CONSOLE_PROTOCOL);
    let out = '';
    ws.on('message', (d: Buffer, binary: boolean) => {
      if (binary) out += d.toString('utf8');
    });
    ws.send(Buffer.from('echo K$((40+2))\n'), { binary: true });
    for (let i = 0; i < 200 && !out.includes('K42'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain('K42');
    ws.close();
  });

  it('refuses a wrong key (401), another tenant (403) and a foreign Origin (403)', async () => {
    const url = `${base}/v1/sessions/demo/pty`;
    expect(await dial(url, [CONSOLE_PROTOCOL, keyProtocol('not-a-key-0123456789abcdef')])).toBe(401);
    expect(await dial(`${url}?namespace=team-a`, [CONSOLE_PROTOCOL, keyProtocol(KEYS.b)])).toBe(403);
    expect(await dial(url, [CONSOLE_PROTOCOL, keyProtocol(KEYS.a)], { origin: 'https://evil.example' })).toBe(
      403,
    );
  });

  it('SECURITY: no other route takes the key from a subprotocol (the port route would pass it on)', async () => {
    const status = await dial(`${base}/v1/sessions/demo/ports/8000/`, [
      CONSOLE_PROTOCOL,
      keyProtocol(KEYS.a),
    ]);
    expect(status).toBe(401);
  });
});
