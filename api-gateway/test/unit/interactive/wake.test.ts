/**
 * Wake on traffic (issue 27, ADR 0015): a port-route request, a terminal open or a process call to
 * a suspended session resumes it and is answered once the session is Ready (here the fake store
 * plays the operator: the session is Ready again a moment after spec.suspend went false), within
 * the wait budget, and counts as activity. A port request to a session that merely starts still
 * answers 503 at once; one that wakes a session that does not come back gets 503 after the
 * default wait. A woken request whose server is still starting (the startup command) is retried
 * on refused connections within the wait budget.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';

import { KEYS, auth } from '../../helpers/app.js';
import { buildPtyHelper, startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { startSandboxServer, type SandboxServer } from '../../helpers/sandbox-server.js';
import { ready, session } from '../../helpers/sessions.js';

/** spec.suspend true and the operator's Suspended condition (the Pod gone). */
function suspended(): ReturnType<typeof session> {
  return session('demo', 'team-a', (s) => {
    s.spec.suspend = true;
    s.status = {
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'Suspended',
          message: 'Suspended: the Pod was deleted',
          lastTransitionTime: '2030-01-01T00:00:01Z',
        },
      ],
    };
  });
}

describe('wake on traffic', () => {
  let g: AgentApp;
  let sandbox: SandboxServer;
  let comesBack = true;
  const resumes: string[] = [];

  beforeAll(async () => {
    g = await startAgentApp({
      ptyHelperPath: await buildPtyHelper(),
      env: { GATEWAY_DEFAULT_WAIT_SECONDS: '2' },
    });
    sandbox = await startSandboxServer((_req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('dev server says hi');
    });
    // The operator: once the gateway resumed the session, it is Ready again 100 ms later.
    const patch = g.store.setSuspended.bind(g.store);
    g.store.setSuspended = async (namespace, name, suspend) => {
      const out = await patch(namespace, name, suspend);
      resumes.push(`${namespace}/${name}`);
      if (!suspend && comesBack)
        setTimeout(() => g.store.put(session(name, namespace, ready('127.0.0.1'))), 100);
      return out;
    };
  });
  afterEach(() => {
    resumes.length = 0;
    g.activity.touched.length = 0;
    comesBack = true;
    g.store.put(session('demo', 'team-a', ready('127.0.0.1')));
  });
  afterAll(async () => {
    await sandbox.close();
    await g.close();
  });

  const portUrl = (): string => `${g.url}/v1/sessions/demo/ports/${sandbox.port}/`;

  it("a port-route request resumes the session and returns the server's answer once Ready", async () => {
    g.store.put(suspended());
    const res = await fetch(portUrl(), { headers: auth(KEYS.a) });
    expect([res.status, await res.text()]).toEqual([200, 'dev server says hi']);
    expect(resumes).toEqual(['team-a/demo']);
    expect(g.activity.touched).toContain('team-a/demo');
  });

  it('a woken port request waits for the startup command to bring its server up (refused connections retried)', async () => {
    const late = http.createServer((_req, res) => res.end('late server'));
    const free = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    g.store.put(suspended());
    const answer = fetch(`${g.url}/v1/sessions/demo/ports/${free}/`, { headers: auth(KEYS.a) });
    // The server starts listening 400 ms after the session came back (Ready at 100 ms).
    setTimeout(() => late.listen(free, '127.0.0.1'), 500);
    const res = await answer;
    expect([res.status, await res.text()]).toEqual([200, 'late server']);
    late.close();
    // Without a wake, nothing listening is answered at once.
    const refused = await fetch(`${g.url}/v1/sessions/demo/ports/${free}/`, { headers: auth(KEYS.a) });
    expect(refused.status).toBe(502);
  });

  it('a port-route request that wakes a session that does not come back: 503 after the default wait', async () => {
    comesBack = false;
    g.store.put(suspended());
    const res = await fetch(portUrl(), { headers: auth(KEYS.a) });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { type: string }).type).toMatch(/session-not-ready$/);
    expect(resumes).toEqual(['team-a/demo']);
  });

  it('a port-route request to a session that merely starts answers 503 at once (no wake, no wait)', async () => {
    g.store.put(session('demo', 'team-a'));
    const res = await fetch(portUrl(), { headers: auth(KEYS.a) });
    expect(res.status).toBe(503);
    expect(resumes).toEqual([]);
  });

  it('opening the terminal resumes the session, then opens it', async () => {
    g.store.put(suspended());
    const ws = new WebSocket(`${g.url.replace('http', 'ws')}/v1/sessions/demo/pty`, {
      headers: auth(KEYS.a),
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.once('error', reject);
    });
    ws.close();
    expect(resumes).toEqual(['team-a/demo']);
    expect(g.activity.touched).toContain('team-a/demo');
  });

  it('a process call resumes the session, then runs', async () => {
    g.store.put(suspended());
    const res = await fetch(`${g.url}/v1/sessions/demo/processes`, {
      method: 'POST',
      headers: { ...auth(KEYS.a), 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'true' }),
    });
    expect(res.status).toBe(201);
    expect(resumes).toEqual(['team-a/demo']);
    expect(g.activity.touched).toContain('team-a/demo');
  });
});
