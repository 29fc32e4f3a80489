/** `sbx shell NAME` against a fake gateway terminal (a WebSocket server speaking the pty protocol). */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { WebSocketServer, type WebSocket } from 'ws';

import { ptyUrl } from '../../src/commands/shell.js';
import { sbx } from './helpers.js';

describe('sbx shell', () => {
  let server: http.Server;
  let wss: WebSocketServer;
  let url: string;
  const seen: { url?: string; auth?: string; input: string; texts: string[] } = { input: '', texts: [] };
  let onConnection: (ws: WebSocket) => void;

  beforeEach(async () => {
    seen.input = '';
    seen.texts = [];
    server = http.createServer((_req, res) => {
      res.writeHead(404).end();
    });
    wss = new WebSocketServer({ noServer: true });
    server.on('upgrade', (req, socket, head) => {
      seen.url = req.url;
      seen.auth = req.headers.authorization;
      if (req.url?.startsWith('/v1/sessions/busy/')) {
        const body = JSON.stringify({
          type: 'https://sandbox.dev/problems/too-many-terminals',
          title: 'Too many terminals',
          status: 409,
          detail: 'the sandbox has 4 terminals open',
        });
        socket.end(
          `HTTP/1.1 409 Conflict\r\ncontent-type: application/problem+json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
        );
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    wss.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('relays stdin and the terminal output, and exits with the remote status', async () => {
    onConnection = (ws) => {
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        if (!isBinary) return void seen.texts.push(data.toString());
        seen.input += data.toString();
        if (seen.input.includes('exit 3\n')) {
          ws.send(Buffer.from('bye\r\n'), { binary: true });
          ws.send(JSON.stringify({ type: 'exit', exitCode: 3 }));
          ws.close(1000);
        }
      });
      ws.send(Buffer.from('$ '), { binary: true });
    };
    const r = await sbx(
      ['shell', 'my box', '--url', url, '--key', 'k-1', '-n', 'team-a'],
      {},
      'echo hi\nexit 3\n',
    );
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('$ bye\r\n');
    expect(seen.input).toBe('echo hi\nexit 3\n');
    expect(seen.auth).toBe('Bearer k-1');
    expect(seen.url).toBe('/v1/sessions/my%20box/pty?namespace=team-a');
  });

  it("reports the gateway's refusal before the upgrade as one line, exit 1", async () => {
    const r = await sbx(['shell', 'busy', '--url', url, '--key', 'k-1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the sandbox has 4 terminals open (too-many-terminals, HTTP 409)');
  });

  it('exits 1 with a line when the terminal closes without an exit status', async () => {
    onConnection = (ws) => ws.close(1011, 'agent gone');
    const r = await sbx(['shell', 'box', '--url', url, '--key', 'k-1'], {}, '');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the terminal closed (1011: agent gone)');
  });

  it('builds ws and wss URLs with the window size', () => {
    expect(ptyUrl('https://gw.example/', 'a', { cols: 120, rows: 40 }).href).toBe(
      'wss://gw.example/v1/sessions/a/pty?cols=120&rows=40',
    );
    expect(ptyUrl('http://gw:8080', 'a', {}, 'ns').href).toBe('ws://gw:8080/v1/sessions/a/pty?namespace=ns');
  });
});
