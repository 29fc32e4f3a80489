/**
 * The E2B API on a real API server, with the production wiring (composeDeps) and real agents,
 * driven by the official JS e2b SDK: what its control calls write to the SandboxSession objects
 * (lifecycle fields, metadata, workspace, shutdown policy, pool), the SandboxPool lookup of
 * templates (a real GET), and the namespaces of keys. The test plays the operator (GatewayEnv).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ANNOTATIONS, GROUP, POOL_PLURAL, REASONS, VERSION } from '@sandbox-platform/api';
// The SDK's ESM build: jest cannot load its CommonJS main (it require()s the ESM-only chalk).
import { Sandbox, SandboxError, SandboxNotFoundError } from 'e2b/dist/index.mjs';

import { METADATA_ANNOTATION } from '../../src/e2b/control/views.js';
import { condition, type Gateway, GatewayEnv, KEYS } from '@sandbox-platform/test-support/gateway';

describe('the E2B API on a real API server', () => {
  const env = new GatewayEnv();
  let gw: Gateway;
  let operator: NodeJS.Timeout;
  const made = new Set<string>();
  const opts = (apiKey: string): { apiKey: string; apiUrl: string; sandboxUrl: string } => ({
    apiKey,
    apiUrl: `${gw.url}/e2b`,
    sandboxUrl: `${gw.url}/e2b/envd`,
  });

  beforeAll(async () => {
    await env.setup();
    gw = await env.startGateway({ GATEWAY_MAX_WAIT_SECONDS: '30', GATEWAY_DEFAULT_WAIT_SECONDS: '30' });
    // The operator's part: every new session of tenant A gets a Ready Pod with a real agent.
    // Suspension: the Pod goes (Ready=False/Suspended); a resume gets a new Pod and agent.
    const tick = async (): Promise<void> => {
      for (const s of await env.list(env.nsA.name)) {
        const name = s.metadata.name!;
        const reason = s.status?.conditions?.[0]?.reason;
        if (s.metadata.deletionTimestamp) continue;
        if (s.spec.suspend === true && reason !== REASONS.suspended) {
          await env.kube.core
            .deleteNamespacedPod({ namespace: env.nsA.name, name: `sbs-${name}` })
            .catch(() => undefined);
          await env.patchStatus(env.nsA.name, name, {
            conditions: [condition('False', REASONS.suspended, 'test: suspended')],
          });
        } else if (s.spec.suspend !== true && (reason === REASONS.suspended || !made.has(name))) {
          made.add(name);
          await env.makeReady(env.nsA.name, name);
        }
      }
    };
    operator = setInterval(() => void tick().catch(() => undefined), 150);
  });
  afterAll(async () => {
    clearInterval(operator);
    await env.teardown();
  });

  it('create writes the session: lifetime and idle timeout from the timeout, a persistent workspace, metadata, the creating key', async () => {
    const sbx = await Sandbox.create({
      ...opts(KEYS.a),
      timeoutMs: 120_000,
      metadata: { team: 'x' },
      envs: { GREETING: 'hi' },
    });
    const [name, namespace] = sbx.sandboxId.split('.') as [string, string];
    expect(namespace).toBe(env.nsA.name);
    const cr = await env.read(namespace, name);
    expect(cr.spec).toMatchObject({
      idleTimeoutSeconds: 120,
      maxLifetimeSeconds: 120,
      workspace: { persistentVolumeClaim: {} },
      env: [{ name: 'GREETING', value: 'hi' }],
    });
    expect(cr.metadata.annotations).toMatchObject({
      [METADATA_ANNOTATION]: '{"team":"x"}',
      [ANNOTATIONS.createdByKey]: 'a',
    });
    expect((await sbx.commands.run('echo through-the-agent')).stdout).toBe('through-the-agent\n');

    await sbx.setTimeout(600_000);
    const timed = await env.read(namespace, name);
    expect(timed.spec.idleTimeoutSeconds).toBe(600);
    expect(timed.spec.maxLifetimeSeconds).toBeGreaterThanOrEqual(600);
    expect(timed.spec.maxLifetimeSeconds).toBeLessThan(700);
    expect(timed.metadata.annotations?.[ANNOTATIONS.lastActivity]).toBeDefined();

    await sbx.pause();
    const paused = await env.read(namespace, name);
    expect(paused.spec.suspend).toBe(true);
    expect(paused.status?.conditions?.[0]?.reason).toBe(REASONS.suspended);
    expect(await Sandbox.pause(sbx.sandboxId, opts(KEYS.a))).toBe(false); // already paused: 409
    // pause returned once the operator reported the suspension; connect waits for the new Pod.
    const back = await Sandbox.connect(sbx.sandboxId, opts(KEYS.a));
    expect((await env.read(namespace, name)).spec.suspend).toBe(false);
    expect((await back.commands.run('echo resumed')).stdout).toBe('resumed\n');

    await expect(Sandbox.getInfo(sbx.sandboxId, opts(KEYS.b))).rejects.toBeInstanceOf(SandboxNotFoundError);
    expect(await Sandbox.kill(sbx.sandboxId, opts(KEYS.a))).toBe(true);
    const gone = await env.read(namespace, name).catch((err: unknown) => err);
    expect(gone).toMatchObject({ code: 404 });
  });

  it('autoPause sessions suspend when idle (shutdownPolicy Suspend)', async () => {
    const sbx = await Sandbox.create({
      ...opts(KEYS.a),
      timeoutMs: 300_000,
      lifecycle: { onTimeout: 'pause' },
    });
    const cr = await env.read(env.nsA.name, sbx.sandboxId.split('.')[0]!);
    expect(cr.spec).toMatchObject({
      shutdownPolicy: 'Suspend',
      idleTimeoutSeconds: 300,
      workspace: { persistentVolumeClaim: {} },
    });
    expect((await sbx.getInfo()).lifecycle).toEqual({ autoResume: true, onTimeout: 'pause' });
    await sbx.kill();
  });

  it('a template names a SandboxPool of the namespace (read from the API server), else 404 and nothing created', async () => {
    await env.kube.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: env.nsA.name,
      plural: POOL_PLURAL,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'SandboxPool',
        metadata: { name: 'pytpl' },
        spec: { replicas: 1, template: {} },
      },
    });
    const sbx = await Sandbox.create('pytpl', opts(KEYS.a));
    const cr = await env.read(env.nsA.name, sbx.sandboxId.split('.')[0]!);
    expect(cr.spec.poolRef).toEqual({ name: 'pytpl' });
    expect(cr.spec.workspace?.persistentVolumeClaim).toBeUndefined();
    await sbx.kill();
    const before = (await env.list(env.nsA.name)).length;
    const err = await Sandbox.create('no-such-pool', opts(KEYS.a)).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(SandboxError);
    expect(err).toMatchObject({ statusCode: 404 });
    expect((await env.list(env.nsA.name)).length).toBe(before);
  });

  it('keeps the session watch and the API server in agreement about what a list shows', async () => {
    const sbx = await Sandbox.create({ ...opts(KEYS.a), metadata: { list: 'me' } });
    const listed = await Sandbox.list({ ...opts(KEYS.a), query: { metadata: { list: 'me' } } }).nextItems();
    expect(listed.map((s) => s.sandboxId)).toEqual([sbx.sandboxId]);
    expect(await Sandbox.list({ ...opts(KEYS.b), query: { metadata: { list: 'me' } } }).nextItems()).toEqual(
      [],
    );
    await sbx.kill();
  });
});
