/**
 * e2e: interactive work in a sandbox through the in-cluster api-gateway (issue 15), with the API
 * key, never the session token: stdin on exec (1 MiB of binary through `cat`, python3 counting
 * stdin), a background `python3 -m http.server 8000` started through the API, listed, its log
 * read, its directory listing fetched through the port route, stopped with SIGTERM and waited for;
 * a WebSocket echo server (python3 stdlib) reached through the port route; a terminal over
 * WebSocket (`stty size` after a resize, `exit 3` -> 3); the official MCP SDK client starting a
 * process, reading its output and stopping it; the other tenant's key refused on every new route;
 * bad input answered with problem+json.
 *
 * Needs the platform deployed and, from the e2e setup: E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY (may
 * use E2E_NAMESPACE), E2E_OTHER_API_KEY (may use E2E_OTHER_NAMESPACE only).
 */
import { randomBytes } from 'node:crypto';

import { describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import WebSocket from 'ws';

import { namespaceOf } from '../isolation/support.js';
import {
  BASE,
  KEY,
  OTHER_KEY,
  api,
  eventually,
  expectProblem,
  gatewaySession,
} from './interactive-support.js';

const NAMESPACE = namespaceOf('e2e');
const OTHER_NAMESPACE = namespaceOf('other');
const MIB = 1024 * 1024;

/** A minimal WebSocket echo server on the python3 standard library (text and binary, < 64 KiB). */
const WS_ECHO_PY = String.raw`
import socket, hashlib, base64, struct
G = b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 8765)); s.listen(8)
print('echo ready', flush=True)
def recvn(c, n):
    b = b''
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d: raise EOFError()
        b += d
    return b
while True:
    c, _ = s.accept()
    try:
        h = b''
        while b'\r\n\r\n' not in h: h += c.recv(4096)
        key = [l.split(b':', 1)[1].strip() for l in h.split(b'\r\n') if l.lower().startswith(b'sec-websocket-key:')][0]
        acc = base64.b64encode(hashlib.sha1(key + G).digest())
        c.sendall(b'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + acc + b'\r\n\r\n')
        while True:
            b0, b1 = recvn(c, 2)
            op, n = b0 & 15, b1 & 127
            if n == 126: n = struct.unpack('>H', recvn(c, 2))[0]
            elif n == 127: n = struct.unpack('>Q', recvn(c, 8))[0]
            m = recvn(c, 4) if b1 & 128 else b'\0\0\0\0'
            p = bytes(x ^ m[i % 4] for i, x in enumerate(recvn(c, n)))
            if op == 8:
                c.sendall(b'\x88\x02' + p[:2]); break
            if op in (1, 2):
                c.sendall(bytes([0x80 | op]) + (bytes([len(p)]) if len(p) < 126 else b'\x7e' + struct.pack('>H', len(p))) + p)
    except Exception as e:
        print('echo error', e, flush=True)
    finally:
        c.close()
`;

describe('interactive work through the gateway', () => {
  const { name, path: sessionPath } = gatewaySession('gw-interactive');

  it('stdin: cat echoes 1 MiB of binary exactly; python3 counts stdin', async () => {
    const bytes = randomBytes(MIB);
    const r = await api('POST', `${sessionPath}/exec`, {
      command: 'cat',
      stdin: bytes.toString('base64'),
      stdinEncoding: 'base64',
    });
    expect(r.body).toMatchObject({ exitCode: 0, truncated: false, stdoutEncoding: 'base64' });
    expect(Buffer.from(String(r.body.stdout), 'base64').equals(bytes)).toBe(true);
    const counted = await api('POST', `${sessionPath}/exec`, {
      command: `python3 -c 'import sys; print(len(sys.stdin.read()))'`,
      stdin: 'y'.repeat(4321),
    });
    expect(counted.body).toMatchObject({ exitCode: 0, stdout: '4321\n' });
  });

  it('a background http.server: started, listed, log read, reached through the port route, SIGTERM and wait', async () => {
    await api('POST', `${sessionPath}/exec`, { command: 'mkdir -p site && echo hi > site/marker-file.txt' });
    const started = await api('POST', `${sessionPath}/processes`, {
      command: 'cd site && exec python3 -u -m http.server 8000',
    });
    expect(started.status).toBe(201);
    const id = String(started.body.id);
    const list = await api('GET', `${sessionPath}/processes`);
    expect((list.body.processes as Array<{ id: string }>).map((p) => p.id)).toContain(id);

    const page = await eventually('the directory listing through the port route', async () => {
      const res = await fetch(new URL(`${sessionPath}/ports/8000/`, BASE), {
        headers: { authorization: `Bearer ${KEY}` },
      });
      const text = await res.text();
      return res.status === 200 ? text : undefined;
    });
    expect(page).toContain('Directory listing');
    expect(page).toContain('marker-file.txt');
    const file = await fetch(new URL(`${sessionPath}/ports/8000/marker-file.txt`, BASE), {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(await file.text()).toBe('hi\n');

    // http.server logs each request on stderr; its banner on stdout.
    const log = await eventually('the request in the server log', async () => {
      const out = await api('GET', `${sessionPath}/processes/${id}/output`);
      const stderr = String((out.body.stderr as { data: string }).data);
      return stderr.includes('GET /marker-file.txt') ? out : undefined;
    });
    expect(String((log.body.stdout as { data: string }).data)).toContain('Serving HTTP');

    const sig = await api('POST', `${sessionPath}/processes/${id}/signal`, { signal: 'SIGTERM' });
    expect(sig.status).toBe(200);
    const waited = await api('GET', `${sessionPath}/processes/${id}/wait?timeoutSeconds=30`);
    expect(waited.body).toMatchObject({ id, state: 'exited', exitCode: 143, signal: 'SIGTERM' });
    expect((await api('DELETE', `${sessionPath}/processes/${id}`)).status).toBe(204);
  });

  it('a WebSocket echo server in the sandbox is reachable through the port route', async () => {
    await api('POST', `${sessionPath}/exec`, { command: 'cat > ws_echo.py', stdin: WS_ECHO_PY });
    const started = await api('POST', `${sessionPath}/processes`, { command: 'exec python3 -u ws_echo.py' });
    const id = String(started.body.id);
    await eventually('the echo server', async () => {
      const out = await api('GET', `${sessionPath}/processes/${id}/output`);
      return String((out.body.stdout as { data: string }).data).includes('echo ready') ? true : undefined;
    });
    const ws = new WebSocket(new URL(`${sessionPath}/ports/8765/`, BASE).href.replace(/^http/, 'ws'), {
      headers: { authorization: `Bearer ${KEY}` },
    });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const got: Array<{ data: string; binary: boolean }> = [];
    const both = new Promise<void>((resolve) =>
      ws.on('message', (data: Buffer, binary: boolean) => {
        got.push({ data: data.toString(), binary });
        if (got.length === 2) resolve();
      }),
    );
    ws.send('hello through the gateway');
    ws.send(Buffer.from('binary bytes'), { binary: true });
    await both;
    expect(got).toEqual([
      { data: 'hello through the gateway', binary: false },
      { data: 'binary bytes', binary: true },
    ]);
    ws.close(1000);
    await api('POST', `${sessionPath}/processes/${id}/signal`, { signal: 'SIGKILL' });
    await api('GET', `${sessionPath}/processes/${id}/wait`);
    await api('DELETE', `${sessionPath}/processes/${id}`);
  });

  it('a terminal over WebSocket: stty size after a resize, exit 3 -> status 3', async () => {
    const ws = new WebSocket(
      new URL(`${sessionPath}/pty?cols=90&rows=20`, BASE).href.replace(/^http/, 'ws'),
      {
        headers: { authorization: `Bearer ${KEY}` },
      },
    );
    let output = '';
    const texts: string[] = [];
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) output += data.toString('utf8');
      else texts.push(data.toString('utf8'));
    });
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const until = (pattern: RegExp): Promise<RegExpExecArray> =>
      eventually(`${String(pattern)} in the terminal`, () =>
        Promise.resolve(pattern.exec(output) ?? undefined),
      );
    ws.send(JSON.stringify({ type: 'resize', cols: 132, rows: 43 }));
    // The marker is computed by the shell: the terminal echoes what is typed.
    ws.send(Buffer.from('echo "S:$(stty size):S"\r'), { binary: true });
    expect((await until(/S:(\d+ \d+):S/))[1]).toBe('43 132');
    ws.send(Buffer.from('exit 3\r'), { binary: true });
    expect(await closed).toBe(1000);
    expect(texts.map((t) => JSON.parse(t) as unknown)).toEqual([{ type: 'exit', exitCode: 3 }]);
  });

  it('the official MCP SDK client starts a process, reads its output and stops it', async () => {
    const client = new Client({ name: 'e2e-interactive', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', BASE), {
        requestInit: { headers: { authorization: `Bearer ${KEY}` } },
      }),
    );
    try {
      const started = await client.callTool({
        name: 'start_process',
        arguments: { session: name, command: 'echo from-mcp; exec sleep 600' },
      });
      expect(started.isError).toBeFalsy();
      const id = String((started.structuredContent as { id: string }).id);
      const out = await eventually('the output through MCP', async () => {
        const r = await client.callTool({ name: 'read_process_output', arguments: { session: name, id } });
        const s = r.structuredContent as { stdout: { data: string } };
        return s.stdout.data.includes('from-mcp') ? s : undefined;
      });
      expect(out.stdout.data).toBe('from-mcp\n');
      const stopped = await client.callTool({ name: 'signal_process', arguments: { session: name, id } });
      expect(stopped.structuredContent).toMatchObject({ id, state: 'exited', exitCode: 143 });
    } finally {
      await client.close();
    }
  });

  it("the other tenant's key is refused on every new route", async () => {
    const started = await api('POST', `${sessionPath}/processes`, { command: 'exec sleep 600' });
    const id = String(started.body.id);
    const inOwn = `?namespace=${OTHER_NAMESPACE}`;
    const inOurs = `?namespace=${NAMESPACE}`;
    for (const [method, path, body] of [
      ['GET', `${sessionPath}/processes`, undefined],
      ['POST', `${sessionPath}/processes`, { command: 'id' }],
      ['GET', `${sessionPath}/processes/${id}`, undefined],
      ['GET', `${sessionPath}/processes/${id}/output`, undefined],
      ['GET', `${sessionPath}/processes/${id}/output/stream`, undefined],
      ['POST', `${sessionPath}/processes/${id}/signal`, { signal: 'SIGKILL' }],
      ['GET', `${sessionPath}/processes/${id}/wait?timeoutSeconds=0`, undefined],
      ['DELETE', `${sessionPath}/processes/${id}`, undefined],
    ] as const) {
      const sep = path.includes('?') ? '&' : '?';
      expectProblem(
        await api(method, `${path}${sep}${inOwn.slice(1)}`, body, OTHER_KEY),
        404,
        'session-not-found',
      );
      expectProblem(await api(method, `${path}${sep}${inOurs.slice(1)}`, body, OTHER_KEY), 403, 'forbidden');
    }
    // Ports: the namespace comes from a header (the query is the sandbox server's).
    const port = await fetch(new URL(`${sessionPath}/ports/8000/`, BASE), {
      headers: { authorization: `Bearer ${OTHER_KEY}` },
    });
    expect(port.status).toBe(404);
    const portForbidden = await fetch(new URL(`${sessionPath}/ports/8000/`, BASE), {
      headers: { authorization: `Bearer ${OTHER_KEY}`, 'x-sandbox-namespace': NAMESPACE },
    });
    expect(portForbidden.status).toBe(403);
    // The terminal: refused before the upgrade.
    const ptyStatus = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(new URL(`${sessionPath}/pty${inOurs}`, BASE).href.replace(/^http/, 'ws'), {
        headers: { authorization: `Bearer ${OTHER_KEY}` },
      });
      ws.once('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.on('error', () => undefined);
        ws.terminate();
      });
      ws.once('open', () => reject(new Error('the other tenant opened a terminal')));
      ws.once('error', reject);
    });
    expect(ptyStatus).toBe(403);
    // The process is untouched.
    expect((await api('GET', `${sessionPath}/processes/${id}`)).body).toMatchObject({ state: 'running' });
    await api('POST', `${sessionPath}/processes/${id}/signal`, { signal: 'SIGKILL' });
    await api('GET', `${sessionPath}/processes/${id}/wait`);
    await api('DELETE', `${sessionPath}/processes/${id}`);
  });

  it('bad input is answered with problem+json', async () => {
    for (const p of ['0', '65536', 'abc']) {
      const res = await fetch(new URL(`${sessionPath}/ports/${p}/`, BASE), {
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect({ p, status: res.status, type: res.headers.get('content-type') }).toMatchObject({
        p,
        status: 400,
      });
      expect(((await res.json()) as { type: string }).type).toBe(
        'https://sandbox.dev/problems/invalid-request',
      );
    }
    const agentPort = await fetch(new URL(`${sessionPath}/ports/8090/`, BASE), {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(agentPort.status).toBe(403);
    expectProblem(await api('GET', `${sessionPath}/processes/0123456789ab`), 404, 'process-not-found');
    expectProblem(await api('GET', `${sessionPath}/processes/0123456789ab/output`), 404, 'process-not-found');
    const started = await api('POST', `${sessionPath}/processes`, { command: 'exec sleep 600' });
    const id = String(started.body.id);
    expectProblem(
      await api('POST', `${sessionPath}/processes/${id}/signal`, { signal: 'SIGSEGV' }),
      400,
      'signal-not-allowed',
    );
    expectProblem(await api('POST', `${sessionPath}/processes`, { command: '' }), 400, 'invalid-request');
    await api('POST', `${sessionPath}/processes/${id}/signal`, { signal: 'SIGKILL' });
    await api('GET', `${sessionPath}/processes/${id}/wait`);
    await api('DELETE', `${sessionPath}/processes/${id}`);
  });
});
