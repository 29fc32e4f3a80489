/**
 * A session's env with Secret references and its startup command (docs/adr/0016, "Env, Secrets and
 * startup at bind time"), through the real reconcile driver over the fake cluster and pools:
 *
 * - warm: the bind carries the plain values, the Secret values and the startup command; the warm
 *   Pod's spec, the session's status and its Events hold none of them;
 * - cold: the Pod gets the references (the kubelet reads the values) and the startup command;
 *   a pooled session created cold gets the template's env, then its own;
 * - a Secret or key that does not exist, or values that cannot be exported: Ready=False with a
 *   stable reason naming the Secret and key, a Warning Event, nothing claimed or created, looked at
 *   again later; once the Secret exists the session provisions.
 */
import { beforeEach, describe, expect, it } from '@jest/globals';
import {
  SECRET_ENV_MAX_TOTAL_BYTES,
  STARTUP_COMMAND_ENV,
  type SandboxSessionSpec,
} from '@sandbox-platform/api';

import { reconcile } from '../../../src/controller/reconcile.js';
import type { ControllerDeps } from '../../../src/controller/scope.js';
import type { PoolPodOptions } from '../../../src/pool/pool-pod.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakePools } from '../../fakes/fake-pools.js';
import { FakeClock, controllerDeps } from '../../fakes/fakes.js';
import { session, withSpec } from '../../fixtures/sessions.js';

let cluster: FakeCluster;
let pools: FakePools;
let deps: ControllerDeps;
let opts: PoolPodOptions;

const SECRET_VALUE = 'tok-9f8e7d6c5b4a';
const PLAIN_A = 'alpha-1a2b3c';
const PLAIN_B = 'bravo-4d5e6f';
const ENV: SandboxSessionSpec['env'] = [
  { name: 'A', value: PLAIN_A },
  { name: 'B', value: PLAIN_B },
  { name: 'C', valueFrom: { secretKeyRef: { name: 'api', key: 'token' } } },
];

beforeEach(() => {
  cluster = new FakeCluster();
  pools = new FakePools(cluster);
  const base = controllerDeps(cluster, new FakeClock(Date.parse('2030-01-01T00:00:10Z')));
  opts = pools.podOptions(base.podOptions);
  deps = { ...base, pools: pools.claims(opts) };
});

const key = { namespace: 'team-a', name: 'demo' };
const ready = () => cluster.session()?.status?.conditions?.find((c) => c.type === 'Ready');
const putApiSecret = (data: Record<string, Buffer> = { token: Buffer.from(SECRET_VALUE) }) =>
  cluster.tenantSecrets.set('team-a/api', data);
/** Everything the session's observers could read: its status, its Events, every Pod spec. */
const observable = (): string =>
  JSON.stringify([cluster.session()?.status, cluster.events, [...cluster.pods.values()].map((p) => p.body)]);

function pooled(spec: Partial<SandboxSessionSpec> = {}): void {
  const pool = pools.putPool('warm', { template: { env: [{ name: 'T', value: 'template' }] } });
  pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
  cluster.putSession(session(withSpec({ poolRef: { name: 'warm' }, env: ENV, ...spec })));
}

describe('a pooled session with env, a Secret reference and a startup command', () => {
  it('gets them in its bind, and nowhere else', async () => {
    putApiSecret();
    pooled({ startup: { command: 'python3 -m http.server 8000' } });
    await reconcile(key, deps);
    expect(ready()).toMatchObject({ status: 'True' });
    expect(pools.bound.get('warm-aaaaaaaaaa')).toMatchObject({
      env: [
        { name: 'A', value: PLAIN_A },
        { name: 'B', value: PLAIN_B },
        { name: 'C', value: SECRET_VALUE },
      ],
      startup: { command: 'python3 -m http.server 8000' },
    });
    expect(cluster.tenantSecretReads).toEqual(['team-a/api']);
    const warmPod = JSON.stringify(pools.index.pod('team-a', 'warm-aaaaaaaaaa'));
    for (const value of [SECRET_VALUE, PLAIN_A, PLAIN_B]) {
      expect(observable()).not.toContain(value);
      expect(warmPod).not.toContain(value);
    }
  });

  it('claims nothing while the Secret is missing (SecretNotFound, a Warning), then binds once it exists', async () => {
    pooled();
    const result = await reconcile(key, deps);
    expect(ready()).toMatchObject({
      status: 'False',
      reason: 'SecretNotFound',
      message: "env C: Secret api does not exist in the session's namespace",
    });
    expect(cluster.session()?.status?.phase).toBe('Pending');
    expect(pools.ops).toEqual([]);
    expect(cluster.writes).toEqual(['patchStatus demo']);
    expect(cluster.eventReasons()).toEqual(['SecretNotFound']);
    expect(result.requeueAfterMs).toBe(deps.waitRequeueMs);
    putApiSecret();
    await reconcile(key, deps);
    expect(ready()).toMatchObject({ status: 'True' });
    expect(cluster.session()?.status?.podName).toBe('warm-aaaaaaaaaa');
  });

  it('says which key is missing', async () => {
    putApiSecret({ other: Buffer.from('x') });
    pooled();
    await reconcile(key, deps);
    expect(ready()).toMatchObject({
      reason: 'SecretNotFound',
      message: 'env C: Secret api has no key token',
    });
    expect(pools.ops).toEqual([]);
  });

  it('refuses values that cannot be exported (SecretValueInvalid), naming no value', async () => {
    for (const bad of [
      Buffer.from([0xff, 0xfe]),
      Buffer.from('a\0b'),
      Buffer.alloc(SECRET_ENV_MAX_TOTAL_BYTES + 1, 'x'),
    ]) {
      cluster = new FakeCluster();
      pools = new FakePools(cluster);
      deps = {
        ...controllerDeps(cluster, new FakeClock(Date.parse('2030-01-01T00:00:10Z'))),
        pools: pools.claims(opts),
      };
      putApiSecret({ token: bad });
      pooled();
      await reconcile(key, deps);
      expect(ready()).toMatchObject({ status: 'False', reason: 'SecretValueInvalid' });
      expect(pools.ops).toEqual([]);
      expect(observable()).not.toContain('xxxxxxxx');
    }
  });

  it('goes cold from the template when no warm Pod is available: the template env, then its own, the Secret as a reference', async () => {
    putApiSecret();
    pools.putPool('warm', {
      template: {
        env: [
          { name: 'T', value: 'template' },
          { name: 'A', value: 'shadowed' },
        ],
      },
    });
    cluster.putSession(
      session(withSpec({ poolRef: { name: 'warm' }, env: ENV, startup: { command: 'serve' } })),
    );
    await reconcile(key, deps);
    const container = cluster.pods.get('team-a/sbs-demo')!.body.spec!.containers[0]!;
    expect(
      container.env?.filter((e) => e.name.startsWith('SANDBOX_ENV_') || e.name === STARTUP_COMMAND_ENV),
    ).toEqual([
      { name: 'SANDBOX_ENV_T', value: 'template' },
      { name: 'SANDBOX_ENV_A', value: PLAIN_A },
      { name: 'SANDBOX_ENV_B', value: PLAIN_B },
      { name: 'SANDBOX_ENV_C', valueFrom: { secretKeyRef: { name: 'api', key: 'token' } } },
      { name: STARTUP_COMMAND_ENV, value: 'serve' },
    ]);
    expect(observable()).not.toContain(SECRET_VALUE);
  });
});

describe('a session with its own Pod and a Secret reference', () => {
  it('gets the reference in its Pod (never the value), once the Secret is there', async () => {
    cluster.putSession(session(withSpec({ env: ENV })));
    await reconcile(key, deps);
    expect(ready()).toMatchObject({ reason: 'SecretNotFound' });
    expect(cluster.writes).toEqual(['createSecret sbs-demo-token', 'patchStatus demo']);
    putApiSecret();
    await reconcile(key, deps);
    const env = cluster.pods.get('team-a/sbs-demo')!.body.spec!.containers[0]!.env;
    expect(env).toContainEqual({
      name: 'SANDBOX_ENV_C',
      valueFrom: { secretKeyRef: { name: 'api', key: 'token' } },
    });
    expect(observable()).not.toContain(SECRET_VALUE);
  });

  it('reads no Secret once its Pod exists', async () => {
    putApiSecret();
    cluster.putSession(session(withSpec({ env: ENV })));
    await reconcile(key, deps);
    await reconcile(key, deps);
    expect(cluster.tenantSecretReads).toEqual(['team-a/api']);
  });
});
