/**
 * Suspend and resume through the gateway (ADR 0015) and the create fields of persistent
 * workspaces and warm pools (ADR 0016): the REST routes, resume on the next exec, the MCP tools.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { LightMyRequestResponse } from 'fastify';

import { KEYS, auth, buildTestApp, type TestApp } from '../../helpers/app.js';
import { result } from '../../helpers/fake-transport.js';
import { connectMcp } from '../../helpers/mcp-client.js';
import { expectProblem } from '../../helpers/problem.js';
import { ready, session } from '../../helpers/sessions.js';

type Mod = Parameters<typeof session>[2];

/** spec.suspend true and the operator's Suspended condition (the Pod gone). */
const suspended: Mod = (s) => {
  s.spec.suspend = true;
  s.spec.workspace = { persistentVolumeClaim: {} };
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
};

/**
 * Plays the operator of a resume: once the gateway clears spec.suspend, the session's cache entry
 * is Ready at `ip` (at once, so the tests do not depend on timing).
 */
function operatorResumes(t: TestApp, ip: string): void {
  const patch = t.store.setSuspended.bind(t.store);
  t.store.setSuspended = async (namespace, name, suspend) => {
    const out = await patch(namespace, name, suspend);
    if (!suspend) t.store.put(session(name, namespace, ready(ip)));
    return out;
  };
}

describe('suspend, resume, persistent workspaces and pools (REST)', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await buildTestApp();
  });
  afterEach(async () => {
    await t.app.close();
  });

  const post = (url: string, payload: object = {}, key = KEYS.a): Promise<LightMyRequestResponse> =>
    t.app.inject({ method: 'POST', url, headers: auth(key), payload });

  it('creates a persistent workspace, shutdownPolicy Suspend and a pooled session', async () => {
    const a = await post('/v1/sessions', {
      name: 'keep',
      persistentWorkspace: true,
      shutdownPolicy: 'Suspend',
    });
    expect(a.statusCode).toBe(201);
    expect(a.json()).toMatchObject({
      persistentWorkspace: true,
      suspended: false,
      shutdownPolicy: 'Suspend',
    });
    expect(t.store.get('team-a', 'keep')!.spec).toMatchObject({
      workspace: { persistentVolumeClaim: {} },
      shutdownPolicy: 'Suspend',
    });
    const b = await post('/v1/sessions', { name: 'warm', pool: 'fast' });
    expect(b.statusCode).toBe(201);
    expect(b.json()).toMatchObject({ pool: 'fast', persistentWorkspace: false });
    expect(t.store.get('team-a', 'warm')!.spec.poolRef).toEqual({ name: 'fast' });
  });

  it('refuses Suspend without a persistent workspace, and a pool with Pod-shaping fields', async () => {
    expect(
      expectProblem(
        await post('/v1/sessions', { name: 'x', shutdownPolicy: 'Suspend' }),
        400,
        'invalid-request',
      ).detail,
    ).toMatch(/persistentWorkspace/);
    expect(
      expectProblem(
        await post('/v1/sessions', { name: 'y', pool: 'fast', image: 'busybox', persistentWorkspace: true }),
        400,
        'invalid-request',
      ).detail,
    ).toMatch(/image, persistentWorkspace/);
    expectProblem(await post('/v1/sessions', { name: 'z', pool: 'Not_A_Name' }), 400, 'invalid-request');
    expect(t.store.calls.filter((c) => c.startsWith('create'))).toEqual([]);
  });

  it('answers 409 when an existing session differs in pool or persistentWorkspace', async () => {
    await post('/v1/sessions', { name: 'p', pool: 'fast' });
    expect(
      expectProblem(await post('/v1/sessions', { name: 'p', pool: 'other' }), 409, 'conflict').detail,
    ).toMatch(/pool/);
    await post('/v1/sessions', { name: 'w', persistentWorkspace: true });
    expect(
      expectProblem(await post('/v1/sessions', { name: 'w', persistentWorkspace: false }), 409, 'conflict')
        .detail,
    ).toMatch(/persistentWorkspace/);
  });

  it('suspends and resumes by REST (idempotent), 404 for an unknown session, 403 for another tenant', async () => {
    t.store.put(session('s1', 'team-a', ready()));
    const s = await post('/v1/sessions/s1/suspend');
    expect(s.statusCode).toBe(200);
    expect(s.json()).toMatchObject({ name: 's1', suspended: true, ready: false, reason: 'Suspended' });
    expect((await post('/v1/sessions/s1/suspend')).statusCode).toBe(200);
    const r = await post('/v1/sessions/s1/resume');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ suspended: false });
    expect(t.store.calls).toEqual(['suspend team-a/s1', 'suspend team-a/s1', 'resume team-a/s1']);
    expectProblem(await post('/v1/sessions/nope/suspend'), 404, 'session-not-found');
    expectProblem(await post('/v1/sessions/s1/suspend?namespace=team-b'), 403, 'forbidden');
    expectProblem(await post('/v1/sessions/s1/resume', { waitSeconds: 1, extra: 1 }), 400, 'invalid-request');
  });

  it('resume with waitSeconds answers once Ready, or 503 session-not-ready after the wait', async () => {
    t.store.put(session('s2', 'team-a', suspended));
    const waiting = post('/v1/sessions/s2/resume', { waitSeconds: 5 });
    setTimeout(() => t.store.put(session('s2', 'team-a', ready())), 150);
    const res = await waiting;
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ ready: true, suspended: false });

    t.store.put(session('s3', 'team-a', suspended));
    const slow = await post('/v1/sessions/s3/resume', { waitSeconds: 1 });
    expect(expectProblem(slow, 503, 'session-not-ready').reason).toBe('Suspended');
    expect(slow.headers['retry-after']).toBe('2');
  });

  it('an exec to a suspended session resumes it once and runs on the new Pod', async () => {
    operatorResumes(t, '10.0.0.8');
    t.store.put(session('s4', 'team-a', suspended));
    t.agent.nextResult = result({ stdout: 'back\n', exitCode: 0 });
    const res = await post('/v1/sessions/s4/exec', { command: 'cat x', waitSeconds: 5 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ stdout: 'back\n' });
    expect(t.store.calls).toEqual(['resume team-a/s4']);
    expect(t.agent.calls.map((c) => c.target.podIP)).toEqual(['10.0.0.8']);
  });

  it('a suspended session that does not come back in waitSeconds: 503 with its reason, resumed once', async () => {
    t.store.put(session('s5', 'team-a', suspended));
    const res = await post('/v1/sessions/s5/exec', { command: 'true', waitSeconds: 1 });
    expect(expectProblem(res, 503, 'session-not-ready').reason).toBe('Suspended');
    expect(t.store.calls).toEqual(['resume team-a/s5']);
    expect(t.agent.calls).toHaveLength(0);
  });

  it('a session being suspended (spec.suspend true, its old Pod still Ready) is resumed before it is dialed', async () => {
    const order: string[] = [];
    const patch = t.store.setSuspended.bind(t.store);
    t.store.setSuspended = (namespace, name, suspend) => {
      order.push('resume');
      return patch(namespace, name, suspend);
    };
    t.store.put(session('s6', 'team-a', ready(), (s) => (s.spec.suspend = true)));
    const res = await post('/v1/sessions/s6/exec', { command: 'true', waitSeconds: 0 });
    order.push(`answered ${res.statusCode}`);
    expect(order).toEqual(['resume', 'answered 200']);
    expect(t.store.get('team-a', 's6')!.spec.suspend).toBe(false);
  });
});

describe('suspend_session and resume_session (MCP)', () => {
  let t: TestApp;
  let client: Client;
  beforeAll(async () => {
    t = await buildTestApp();
    const url = await t.app.listen({ port: 0, host: '127.0.0.1' });
    client = await connectMcp(url, KEYS.a);
  });
  afterAll(async () => {
    await client.close();
    await t.app.close();
  });

  it('suspend_session sets spec.suspend; resume_session clears it and waits for Ready', async () => {
    t.store.put(session('m1', 'team-a', ready()));
    const s = await client.callTool({ name: 'suspend_session', arguments: { session: 'm1' } });
    expect(s.structuredContent).toMatchObject({ name: 'm1', suspended: true });
    t.store.put(session('m1', 'team-a', suspended));
    const resumed = client.callTool({ name: 'resume_session', arguments: { session: 'm1' } });
    setTimeout(() => t.store.put(session('m1', 'team-a', ready())), 150);
    expect((await resumed).structuredContent).toMatchObject({ name: 'm1', ready: true, suspended: false });
  });

  it('the exec tool resumes a suspended session in the same call', async () => {
    operatorResumes(t, '10.0.0.12');
    t.store.put(session('m2', 'team-a', suspended));
    t.agent.nextResult = result({ stdout: 'm2\n', exitCode: 0 });
    const r = await client.callTool({ name: 'exec', arguments: { session: 'm2', command: 'cat who' } });
    expect(r.isError).toBeFalsy();
    expect(t.store.calls).toContain('resume team-a/m2');
    expect(t.agent.calls.at(-1)!.target.podIP).toBe('10.0.0.12');
  });

  it('create_session passes pool and persistentWorkspace', async () => {
    const r = await client.callTool({
      name: 'create_session',
      arguments: { name: 'm3', persistentWorkspace: true, shutdownPolicy: 'Suspend' },
    });
    expect(r.structuredContent).toMatchObject({ name: 'm3', persistentWorkspace: true, created: true });
    const p = await client.callTool({ name: 'create_session', arguments: { name: 'm4', pool: 'fast' } });
    expect(p.structuredContent).toMatchObject({ name: 'm4', pool: 'fast' });
  });
});
