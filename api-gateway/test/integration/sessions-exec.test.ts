/**
 * The gateway on a real API server with real agents: create-or-get, exec, streaming exec, files,
 * delete, informer-driven readiness, activity annotations and the gone/not-ready answers.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ANNOTATIONS, REASONS } from '@sandbox-platform/api';

import { SandboxClient, GatewayError } from '@sandbox-platform/client';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { condition, type Gateway, GatewayEnv, KEYS } from '@sandbox-platform/test-support/gateway';

describe('gateway on a real API server with real agents', () => {
  const env = new GatewayEnv();
  let gw: Gateway;
  let a: SandboxClient;
  beforeAll(async () => {
    await env.setup();
    gw = await env.startGateway();
    a = new SandboxClient({ baseUrl: gw.url, apiKey: KEYS.a, retry: { retries: 0 } });
  });
  afterAll(async () => {
    await env.teardown();
  });

  it('create-or-get: 201 then 200 with the same uid; the CR carries the policy-bounded spec', async () => {
    const first = await a.createSession({ name: 'cog', idleTimeoutSeconds: 900 });
    const again = await a.createSession({ name: 'cog', idleTimeoutSeconds: 900 });
    expect([first.created, again.created]).toEqual([true, false]);
    expect(again.session.uid).toBe(first.session.uid);
    expect(first.session.namespace).toBe(env.nsA.name);
    const cr = await env.read(env.nsA.name, 'cog');
    expect(cr.spec).toMatchObject({
      idleTimeoutSeconds: 900,
      maxLifetimeSeconds: 86400,
      execTransport: 'Agent',
    });
    await expect(a.createSession({ name: 'cog', idleTimeoutSeconds: 60 })).rejects.toMatchObject({
      status: 409,
      slug: 'conflict',
    });
  });

  it('execs in the real agent: output, exit codes and shell state that persists between calls', async () => {
    await a.createSession({ name: 'run' });
    const { workspace } = await env.makeReady(env.nsA.name, 'run');
    const first = await a.exec('run', {
      command: 'echo hello; echo oops >&2; export KEEP=kept; mkdir -p sub && cd sub; (exit 3)',
    });
    expect(first).toMatchObject({ stdout: 'hello\n', stderr: 'oops\n', exitCode: 3, timedOut: false });
    const second = await a.exec('run', { command: 'echo "$KEEP $(pwd)"' });
    expect(second).toMatchObject({ exitCode: 0, stdout: `kept ${workspace}/sub\n`, shellReset: false });
    const env2 = await a.exec('run', { command: 'echo "$X"', env: { X: 'per-call' } });
    expect(env2.stdout).toBe('per-call\n');
    // `exit` ends the session's bash: the agent restarts it and the next call says so.
    expect((await a.exec('run', { command: 'exit 7' })).exitCode).toBe(7);
    expect(await a.exec('run', { command: 'echo "[$KEEP]"' })).toMatchObject({
      stdout: '[]\n',
      shellReset: true,
    });
  });

  it('reports a command timeout as exit 124 with timedOut', async () => {
    await a.createSession({ name: 'slow' });
    await env.makeReady(env.nsA.name, 'slow');
    const r = await a.exec('slow', { command: 'echo start; sleep 30', timeoutSeconds: 1 });
    expect(r).toMatchObject({ exitCode: 124, timedOut: true, stdout: 'start\n' });
  });

  it('streams exec output as NDJSON ending with the exit event', async () => {
    await a.createSession({ name: 'stream' });
    await env.makeReady(env.nsA.name, 'stream');
    const events = [];
    for await (const ev of a.execStream('stream', { command: 'echo one; sleep 0.3; echo two >&2; exit 5' }))
      events.push(ev);
    const exit = events.at(-1);
    expect(exit).toMatchObject({ type: 'exit', exitCode: 5 });
    const out = events
      .filter((e) => e.type === 'stdout')
      .map((e) => (e as { data: string }).data)
      .join('');
    const err = events
      .filter((e) => e.type === 'stderr')
      .map((e) => (e as { data: string }).data)
      .join('');
    expect([out, err]).toEqual(['one\n', 'two\n']);
  });

  it('uploads and downloads files; traversal and missing files get their problems', async () => {
    await a.createSession({ name: 'files' });
    await env.makeReady(env.nsA.name, 'files');
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    expect(await a.writeFile('files', 'dir/data.bin', bytes)).toEqual({ path: 'dir/data.bin', size: 5 });
    expect([...(await a.readFile('files', 'dir/data.bin'))]).toEqual([...bytes]);
    expect((await a.exec('files', { command: 'wc -c < dir/data.bin' })).stdout.trim()).toBe('5');
    await expect(a.readFile('files', 'missing.txt')).rejects.toMatchObject({
      status: 404,
      slug: 'not-found',
    });
    await expect(a.readFile('files', '..%2Foutside')).rejects.toBeInstanceOf(GatewayError);
  });

  it('waits for readiness reported by the informer: a pending exec is released when status turns Ready', async () => {
    const { session } = await a.createSession({ name: 'late' });
    const events: string[] = [];
    const pending = a
      .exec('late', { command: 'echo released', waitSeconds: 30 })
      .finally(() => events.push('settled'));
    // Time to answer early (it must not): the exec waits for Ready, then answers.
    await new Promise((r) => setTimeout(r, 1500));
    expect(events).toEqual([]);
    const podIP = await env.startAgentFor(env.nsA.name, 'late', session.uid);
    await env.createPod(env.nsA.name, session, podIP);
    expect(events).toEqual([]);
    events.push('Ready');
    await env.patchStatus(env.nsA.name, 'late', {
      conditions: [condition('True', REASONS.ready, 'now')],
      podIP,
      podName: 'sbs-late',
    });
    const r = await pending;
    expect(r.stdout).toBe('released\n');
    expect(events).toEqual(['Ready', 'settled']);
  });

  it('answers 503 with Retry-After for a session that stays not ready', async () => {
    await a.createSession({ name: 'never' });
    await env.patchStatus(env.nsA.name, 'never', {
      conditions: [condition('False', REASONS.podPending, 'pulling')],
    });
    const err = (await a
      .exec('never', { command: 'true', waitSeconds: 1 })
      .catch((e: unknown) => e)) as GatewayError;
    expect(err).toMatchObject({ status: 503, slug: 'session-not-ready', retryAfterSeconds: 2 });
    expect(err.problem.reason).toBe('PodPending');
  });

  it('answers 410 for a collected (Retain) session and for a deleted one', async () => {
    await a.createSession({ name: 'kept', shutdownPolicy: 'Retain' });
    await env.makeReady(env.nsA.name, 'kept');
    await env.patchStatus(env.nsA.name, 'kept', {
      conditions: [condition('False', REASONS.idleTimeout, 'idle')],
    });
    await waitFor(
      () => a.exec('kept', { command: 'true' }).catch((e: unknown) => e),
      predicate(
        'exec of a collected session to be 410',
        (e) => e instanceof GatewayError && e.status === 410,
      ),
    );
    await a.createSession({ name: 'bye' });
    await env.makeReady(env.nsA.name, 'bye');
    await a.deleteSession('bye');
    const gone = await waitFor(
      () => a.exec('bye', { command: 'true', waitSeconds: 0 }).catch((e: unknown) => e),
      predicate(
        'exec of a deleted session to be 410 Deleted',
        (e) => e instanceof GatewayError && e.status === 410,
      ),
    );
    expect((gone as GatewayError).problem.reason).toBe('Deleted');
    await expect(env.read(env.nsA.name, 'bye')).rejects.toMatchObject({ code: 404 });
    await expect(a.deleteSession('bye')).rejects.toMatchObject({ status: 404 });
  });

  it('patches the last-activity annotation after calls, throttled, off the request path', async () => {
    await a.createSession({ name: 'active' });
    await env.makeReady(env.nsA.name, 'active');
    const before = Date.now();
    await a.exec('active', { command: 'true' });
    const cr = await waitFor(
      () => env.read(env.nsA.name, 'active'),
      predicate('last-activity annotation set', (s) =>
        Boolean(s.metadata.annotations?.[ANNOTATIONS.lastActivity]),
      ),
    );
    const at = Date.parse(cr.metadata.annotations![ANNOTATIONS.lastActivity]!);
    expect(at).toBeGreaterThanOrEqual(before - 1000);
  });

  it("keeps tenants apart: B neither sees nor reaches A's sessions", async () => {
    const b = new SandboxClient({ baseUrl: gw.url, apiKey: KEYS.b, retry: { retries: 0 } });
    await a.createSession({ name: 'private' });
    expect((await b.listSessions()).map((s) => s.name)).not.toContain('private');
    await expect(b.getSession('private', env.nsA.name)).rejects.toMatchObject({ status: 403 });
    await expect(b.exec('private', { command: 'id' }, env.nsA.name)).rejects.toMatchObject({ status: 403 });
    await expect(b.getSession('private')).rejects.toMatchObject({ status: 404 });
  });
});
