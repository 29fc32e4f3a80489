/**
 * SECURITY (issue 25): a session's status forged to name another tenant's Pod (its IP, its name,
 * or a Pod planted in the attacker's namespace) gets 503 pod-identity-unverified on every route that
 * dials a Pod, and the other tenant's Pod sees no connection at all. Tenant B's "Pod" is two servers
 * on 127.0.0.3 (the agent port, answering like an agent, and a port serving a private file) that
 * count every connection; tenant A's session `demo` has its own real agent on 127.0.0.1. The last
 * describe is the positive control: with GATEWAY_POD_IDENTITY_CHECK=false the same forged status
 * reaches B's file, so the counters can see the attack.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import WebSocket from 'ws';

import { KEYS, auth } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { connectMcp, toolText } from '../../helpers/mcp-client.js';
import { expectProblem } from '../../helpers/problem.js';
import { podOf, ready, session } from '../../helpers/sessions.js';

const VICTIM_IP = '127.0.0.3';
const SECRET = 'tenant B private file';

/** Tenant B's Pod: an "agent" on the agent port and an HTTP server with a private file. */
interface VictimPod {
  port: number;
  /** TCP connections accepted on either server. */
  connections: number;
  close(): Promise<void>;
}

async function startVictim(agentPort: number): Promise<VictimPod> {
  const victim = { port: 0, connections: 0, close: (): Promise<void> => Promise.resolve() };
  const web = http.createServer((_req, res) => res.end(SECRET));
  const agent = http.createServer((_req, res) => res.end('{}'));
  for (const s of [web, agent]) s.on('connection', () => victim.connections++);
  await new Promise<void>((r) => web.listen(0, VICTIM_IP, r));
  await new Promise<void>((r) => agent.listen(agentPort, VICTIM_IP, r));
  victim.port = (web.address() as AddressInfo).port;
  victim.close = async () => {
    for (const s of [web, agent]) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  };
  return victim;
}

/** A's session with the given status, B's session with its own Pod on VICTIM_IP; no automatic Pods. */
function plant(g: AgentApp, demoIP: string, demoPod = 'sbs-demo'): void {
  g.store.autoPods = false;
  g.store.pods.clear();
  const own = session('demo', 'team-a', ready('127.0.0.1'));
  const forged = session('demo', 'team-a', ready(demoIP), (s) => (s.status!.podName = demoPod));
  const victim = session('victim', 'team-b', ready(VICTIM_IP));
  g.store.put(forged);
  g.store.put(victim);
  g.store.putPod(podOf(own));
  g.store.putPod(podOf(victim));
}

/** Status of a WebSocket upgrade that was refused (fails when it opens). */
function refusedUpgrade(url: string): Promise<{ status: number; body: string }> {
  const ws = new WebSocket(url.replace('http', 'ws'), { headers: auth(KEYS.a) });
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error('the upgrade was accepted')));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('error', () => undefined);
  });
}

describe('a status forged toward another tenant’s Pod: 503 and no connection', () => {
  let g: AgentApp;
  let victim: VictimPod;
  let mcp: Client;

  beforeAll(async () => {
    g = await startAgentApp();
    victim = await startVictim(g.agent.port);
    mcp = await connectMcp(g.url, KEYS.a);
  });
  afterAll(async () => {
    await mcp.close();
    await victim.close();
    await g.close();
  });

  const routes = (): Array<[string, string, string?]> => [
    ['port route', `/v1/sessions/demo/ports/${victim.port}/private`],
    ['exec', '/v1/sessions/demo/exec', JSON.stringify({ command: 'id' })],
    ['exec/stream', '/v1/sessions/demo/exec/stream', JSON.stringify({ command: 'id' })],
    ['file download', '/v1/sessions/demo/files/private'],
    ['processes', '/v1/sessions/demo/processes'],
  ];

  const forgeries: Array<[string, string, string]> = [
    ["status.podIP forged to B's Pod IP (A's own Pod named)", VICTIM_IP, 'sbs-demo'],
    ["status.podName and podIP forged to B's Pod (another namespace)", VICTIM_IP, 'sbs-victim'],
  ];

  it.each(forgeries)('%s: every route answers 503 pod-identity-unverified', async (_what, ip, pod) => {
    plant(g, ip, pod);
    for (const [what, url, payload] of routes()) {
      const res = await g.app.inject({
        method: payload ? 'POST' : 'GET',
        url,
        headers: { ...auth(KEYS.a), ...(payload ? { 'content-type': 'application/json' } : {}) },
        ...(payload ? { payload } : {}),
      });
      const body = expectProblem(res, 503, 'pod-identity-unverified');
      expect({ what, retryAfter: res.headers['retry-after'], reason: body.reason }).toEqual({
        what,
        retryAfter: '2',
        reason: 'PodIdentityUnverified',
      });
    }
    expect(victim.connections).toBe(0);
  });

  it('a Pod planted in A’s namespace with a made-up apiVersion, or not Ready, is not dialed', async () => {
    const base = podOf(session('demo', 'team-a', ready(VICTIM_IP)), (p) => {
      p.metadata = { ...p.metadata, name: 'planted' };
    });
    for (const planted of [
      { ...base, controller: { ...base.controller, apiVersion: 'sandbox.dev/v0' } },
      { ...base, ready: false },
      { ...base, hostNetwork: true },
    ]) {
      plant(g, VICTIM_IP, 'planted');
      g.store.putPod(planted);
      const res = await g.app.inject({
        url: `/v1/sessions/demo/ports/${victim.port}/`,
        headers: auth(KEYS.a),
      });
      expectProblem(res, 503, 'pod-identity-unverified');
    }
    expect(victim.connections).toBe(0);
  });

  it('WebSocket upgrades (terminal, port route) are refused before any dial', async () => {
    plant(g, VICTIM_IP);
    for (const path of ['/v1/sessions/demo/pty', `/v1/sessions/demo/ports/${victim.port}/ws`]) {
      const { status, body } = await refusedUpgrade(g.url + path);
      expect({ path, status, type: (JSON.parse(body) as { type: string }).type }).toEqual({
        path,
        status: 503,
        type: 'https://sandbox.dev/problems/pod-identity-unverified',
      });
    }
    expect(victim.connections).toBe(0);
  });

  it('MCP tools get the problem as a tool error', async () => {
    plant(g, VICTIM_IP);
    const res = await mcp.callTool({ name: 'exec', arguments: { session: 'demo', command: 'id' } });
    expect(res.isError).toBe(true);
    expect(toolText(res)).toContain('pod-identity-unverified');
    expect(victim.connections).toBe(0);
  });

  it('the session reads as not ready, with the reason', async () => {
    plant(g, VICTIM_IP);
    const res = await g.app.inject({ url: '/v1/sessions/demo', headers: auth(KEYS.a) });
    expect(res.json()).toMatchObject({ ready: false, reason: 'PodIdentityUnverified' });
  });

  it('a call waiting for the session is released once the Pod cache shows its own Pod', async () => {
    plant(g, '127.0.0.1');
    g.store.pods.clear(); // the session's status is ahead of the Pod watch
    const call = g.app.inject({
      method: 'POST',
      url: '/v1/sessions/demo/exec',
      headers: auth(KEYS.a),
      payload: { command: 'echo hi', waitSeconds: 5 },
    });
    await new Promise((r) => setImmediate(r));
    g.store.putPod(podOf(session('demo', 'team-a', ready('127.0.0.1'))));
    const res = await call;
    expect([res.statusCode, res.json<{ stdout: string }>().stdout]).toEqual([200, 'hi\n']);
  });

  it('while the Pod cache has not listed: 503 on calls, /readyz not ready', async () => {
    plant(g, '127.0.0.1');
    g.store.podsAreSynced = false;
    try {
      const res = await g.app.inject({
        method: 'POST',
        url: '/v1/sessions/demo/exec',
        headers: auth(KEYS.a),
        payload: { command: 'id' },
      });
      expectProblem(res, 503, 'pod-identity-unverified');
      const ready = await g.app.inject({ url: '/readyz' });
      expect([ready.statusCode, ready.json()]).toEqual([503, { status: 'pod cache not synced' }]);
    } finally {
      g.store.podsAreSynced = true;
    }
  });

  it("the session's own Pod is dialed (same setup, status not forged)", async () => {
    plant(g, '127.0.0.1');
    const res = await g.app.inject({
      method: 'POST',
      url: '/v1/sessions/demo/exec',
      headers: auth(KEYS.a),
      payload: { command: 'echo own' },
    });
    expect([res.statusCode, res.json<{ stdout: string }>().stdout]).toEqual([200, 'own\n']);
    expect(victim.connections).toBe(0);
  });
});

describe('positive control: GATEWAY_POD_IDENTITY_CHECK=false (the benchmark’s switch)', () => {
  let g: AgentApp;
  let victim: VictimPod;
  beforeAll(async () => {
    g = await startAgentApp({ env: { GATEWAY_POD_IDENTITY_CHECK: 'false' } });
    victim = await startVictim(g.agent.port);
  });
  afterAll(async () => {
    await victim.close();
    await g.close();
  });

  it("the forged status reaches B's private file: what the check prevents", async () => {
    plant(g, VICTIM_IP);
    const res = await fetch(`${g.url}/v1/sessions/demo/ports/${victim.port}/private`, {
      headers: auth(KEYS.a),
    });
    expect([res.status, await res.text()]).toEqual([200, SECRET]);
    expect(victim.connections).toBeGreaterThan(0);
  });
});
