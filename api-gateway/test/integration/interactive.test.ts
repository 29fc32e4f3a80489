/**
 * The surfaces that live only in the gateway, on a real API server with real agents: the port
 * route (to a server listening on the session's pod IP), the terminal WebSocket, background
 * processes, streamed stdin of exec/stream, and suspend/resume (spec.suspend written on the API
 * server; a call to a suspended session writes it back). Lean on purpose: the routes' edge cases
 * are the unit tier's (test/unit/interactive, routes/exec-stdin-stream, routes/suspend).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { REASONS } from '@sandbox-platform/api';
import { eventBytes, SandboxClient, type ExecStreamEvent } from '@sandbox-platform/client';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { condition, type Gateway, GatewayEnv, KEYS } from '@sandbox-platform/test-support/gateway';
import WebSocket from 'ws';

import { buildPtyHelper } from '../helpers/agent-app.js';

const auth = { authorization: `Bearer ${KEYS.a}` };

describe('gateway-only surfaces on a real API server with real agents', () => {
  const env = new GatewayEnv();
  let gw: Gateway;
  let a: SandboxClient;
  let podIP: string;
  beforeAll(async () => {
    env.ptyHelperPath = await buildPtyHelper();
    await env.setup();
    gw = await env.startGateway();
    a = new SandboxClient({ baseUrl: gw.url, apiKey: KEYS.a, retry: { retries: 0 } });
    await a.createSession({ name: 'inter' });
    ({ podIP } = await env.makeReady(env.nsA.name, 'inter'));
  });
  afterAll(async () => {
    await env.teardown();
  });

  it('proxies a request on the port route to a server on the session pod IP', async () => {
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(
        `${req.method} ${req.url} at ${req.socket.localAddress} key=${String(req.headers.authorization)}`,
      );
    });
    await new Promise<void>((r) => server.listen(0, podIP, r));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`${gw.url}/v1/sessions/inter/ports/${port}/hello?x=1`, { headers: auth });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(`GET /hello?x=1 at ${podIP} key=undefined`);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('opens the terminal: typed input runs in bash, its output and exit status come back', async () => {
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/v1/sessions/inter/pty`, { headers: auth });
    let bytes = '';
    const texts: string[] = [];
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) bytes += data.toString('utf8');
      else texts.push(data.toString('utf8'));
    });
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(Buffer.from('echo MARK$((6*7))\n'), { binary: true });
    await waitFor(
      () => Promise.resolve(bytes),
      predicate('terminal output MARK42', (b) => b.includes('MARK42')),
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    ws.send(Buffer.from('exit 3\n'), { binary: true });
    expect(await closed).toBe(1000);
    expect(texts.map((t) => JSON.parse(t) as unknown)).toEqual([{ type: 'exit', exitCode: 3 }]);
  });

  it('starts, lists, reads and kills a background process', async () => {
    const p = await a.startProcess('inter', { command: 'echo started; exec sleep 60' });
    expect(p.state).toBe('running');
    expect((await a.listProcesses('inter')).map((x) => [x.id, x.state])).toContainEqual([p.id, 'running']);
    const out = await waitFor(
      () => a.processOutput('inter', p.id),
      predicate('stdout "started"', (o) => o.stdout.data === 'started\n'),
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(out.stdout.encoding).toBe('utf-8');
    await a.signalProcess('inter', p.id, 'SIGKILL');
    expect(await a.waitProcess('inter', p.id, 10)).toMatchObject({
      state: 'exited',
      signal: 'SIGKILL',
      exitCode: 137,
    });
  });

  it('streams stdin to exec/stream: 256 KiB of binary through cat, byte-exact', async () => {
    const data = randomBytes(256 * 1024);
    async function* stdin(): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < data.length; at += 64 * 1024) {
        await new Promise((r) => setImmediate(r));
        yield data.subarray(at, at + 64 * 1024);
      }
    }
    const events: ExecStreamEvent[] = [];
    for await (const e of a.execStream('inter', { command: 'cat', stdin: stdin() })) events.push(e);
    expect(events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0 });
    const out = Buffer.concat(events.flatMap((e) => (e.type === 'exit' ? [] : [eventBytes(e)])));
    expect(out.equals(data)).toBe(true);
  });

  it('suspend and resume write spec.suspend; an exec to a suspended session writes it back and runs', async () => {
    const ns = env.nsA.name;
    await a.createSession({ name: 'nap', persistentWorkspace: true });
    const { podIP: napIP } = await env.makeReady(ns, 'nap');
    const suspendOf = async (): Promise<boolean | undefined> => (await env.read(ns, 'nap')).spec.suspend;

    expect(await a.suspendSession('nap')).toMatchObject({ name: 'nap', suspended: true });
    expect(await suspendOf()).toBe(true);
    expect(await a.resumeSession('nap')).toMatchObject({ suspended: false });
    expect(await suspendOf()).toBe(false);

    // Suspended as the operator leaves it: spec.suspend true, Ready False (Suspended).
    await a.suspendSession('nap');
    await env.patchStatus(ns, 'nap', {
      conditions: [condition('False', REASONS.suspended, 'test: suspended')],
    });
    const exec = a.exec('nap', { command: 'echo back', waitSeconds: 20 });
    // Plays the operator's resume: once the gateway cleared spec.suspend, the session is Ready again.
    await waitFor(
      suspendOf,
      predicate('spec.suspend false', (s) => s === false),
      {
        timeoutMs: 10_000,
        intervalMs: 100,
      },
    );
    await env.patchStatus(ns, 'nap', {
      conditions: [condition('True', REASONS.ready, 'test: resumed')],
      podIP: napIP,
      podName: 'sbs-nap',
    });
    expect(await exec).toMatchObject({ exitCode: 0, stdout: 'back\n' });
  });
});
