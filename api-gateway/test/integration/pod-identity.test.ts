/**
 * SECURITY (issue 25) on a real API server, with the gateway's production wiring (composeDeps: the
 * session and Pod informers): tenant A, who may write its session's status, forges it toward
 * tenant B's Pod (B's Pod IP; a Pod planted in A's namespace whose controller reference names A's
 * session under a made-up apiVersion; a planted Pod that is not Ready). Each time A's port route
 * answers 503 pod-identity-unverified and B's server (on B's Pod IP) records no connection. The
 * session and Pod objects are real; the Pod IPs are loopback addresses the test reports as the
 * kubelet would (there is no kubelet).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { REASONS } from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { condition, type Gateway, GatewayEnv, KEYS } from '@sandbox-platform/test-support/gateway';

const SECRET = 'tenant B private file';

describe('the gateway dials only the Pod it can tie to the session', () => {
  const env = new GatewayEnv();
  let gw: Gateway;
  let victimIP = '';
  let attackerIP = '';
  let attackerUid = '';
  let server: http.Server;
  let port = 0;
  let connections = 0;

  const call = (path: string): Promise<Response> =>
    fetch(`${gw.url}/v1/sessions/attacker${path}`, { headers: { authorization: `Bearer ${KEYS.a}` } });

  /** A's status forged to `podName`/`podIP`; resolves once the gateway's cache shows it unverified. */
  const forge = async (podName: string, podIP: string): Promise<void> => {
    await env.patchStatus(env.nsA.name, 'attacker', {
      conditions: [condition('True', REASONS.ready, 'forged')],
      podIP,
      podName,
    });
    await waitFor(
      async () => (await (await call('')).json()) as { reason: string },
      predicate('the gateway sees the forged status', (v) => v.reason === 'PodIdentityUnverified'),
      { timeoutMs: 15_000, intervalMs: 100 },
    );
  };

  beforeAll(async () => {
    await env.setup();
    gw = await env.startGateway({ GATEWAY_DEFAULT_WAIT_SECONDS: '1' });
    const create = (key: string, name: string): Promise<{ uid: string }> =>
      fetch(`${gw.url}/v1/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      }).then((r) => r.json() as Promise<{ uid: string }>);
    await create(KEYS.b, 'victim');
    victimIP = (await env.makeReady(env.nsB.name, 'victim')).podIP;
    attackerUid = (await create(KEYS.a, 'attacker')).uid;
    attackerIP = (await env.makeReady(env.nsA.name, 'attacker')).podIP;
    // Tenant B's server on its Pod's IP, with a private file.
    server = http.createServer((_req, res) => res.end(SECRET));
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, victimIP, r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await env.teardown();
  });

  it("A's own Pod is verified and dialed (the control)", async () => {
    const res = await fetch(`${gw.url}/v1/sessions/attacker/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.a}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'echo own' }),
    });
    expect([res.status, ((await res.json()) as { stdout: string }).stdout]).toEqual([200, 'own\n']);
    expect(attackerIP).not.toBe(victimIP);
  });

  it("status.podIP forged to B's Pod IP: 503 pod-identity-unverified, no connection to B", async () => {
    await forge('sbs-attacker', victimIP);
    const res = await call(`/ports/${port}/private`);
    expect([res.status, res.headers.get('retry-after')]).toEqual([503, '2']);
    expect(((await res.json()) as { type: string }).type).toBe(
      'https://sandbox.dev/problems/pod-identity-unverified',
    );
    expect(connections).toBe(0);
  });

  it("status naming B's Pod (another namespace): 503, no connection", async () => {
    await forge('sbs-victim', victimIP);
    expect((await call(`/ports/${port}/private`)).status).toBe(503);
    expect(connections).toBe(0);
  });

  it('a planted Pod with a made-up apiVersion, or one that is not Ready: 503, no connection', async () => {
    const session = { name: 'attacker', uid: attackerUid };
    await env.createPod(env.nsA.name, session, victimIP, { pod: 'planted-v0', apiVersion: 'sandbox.dev/v0' });
    await env.createPod(env.nsA.name, session, victimIP, { pod: 'planted-unready', ready: false });
    for (const pod of ['planted-v0', 'planted-unready']) {
      await forge(pod, victimIP);
      expect({ pod, status: (await call(`/ports/${port}/private`)).status }).toEqual({ pod, status: 503 });
    }
    expect(connections).toBe(0);
  });

  it('the true status again: A is served at once (the Pod cache kept its own Pod)', async () => {
    await env.patchStatus(env.nsA.name, 'attacker', {
      conditions: [condition('True', REASONS.ready, 'restored')],
      podIP: attackerIP,
      podName: 'sbs-attacker',
    });
    await waitFor(
      async () => (await (await call('')).json()) as { ready: boolean },
      predicate('the session reads ready again', (v) => v.ready),
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    expect(connections).toBe(0);
  });
});
