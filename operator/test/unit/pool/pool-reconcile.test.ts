/**
 * The pool reconcile over the fake pool world: it keeps spec.replicas warm Pods of the current
 * template, replaces ended and outdated ones, removes surplus (not-Ready first) with exact
 * preconditions, fills in bounded passes, and reports counts and conditions.
 */
import { beforeEach, describe, expect, it } from '@jest/globals';
import { QuotaRefusedError } from '../../../src/kube/errors.js';
import { reconcilePool, type PoolDeps } from '../../../src/pool/pool-reconcile.js';
import { templateHash, type PoolPodOptions } from '../../../src/pool/pool-pod.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakePools } from '../../fakes/fake-pools.js';
import { FakeClock, controllerDeps } from '../../fakes/fakes.js';

let pools: FakePools;
let opts: PoolPodOptions;
let deps: PoolDeps;
let names: number;

beforeEach(() => {
  const cluster = new FakeCluster();
  pools = new FakePools(cluster);
  opts = pools.podOptions(controllerDeps(cluster, new FakeClock(0)).podOptions);
  names = 0;
  deps = {
    index: pools.index,
    writer: pools.writer(),
    podOptions: opts,
    hashOf: (pool) => templateHash(pool, opts),
    metrics: pools.metrics,
    logger: pools.logger,
    now: () => new Date('2030-01-01T00:00:10Z'),
    maxCreatesPerPass: 10,
    newName: (pool) => `${pool}-${String(++names).padStart(10, '0')}`,
  };
});

const run = () => reconcilePool('team-a', 'warm', deps);
const status = () => pools.statuses.at(-1)?.status;
const condition = (type: string) => status()?.conditions?.find((c) => c.type === type);

describe('reconcilePool', () => {
  it('creates the missing warm Pods and reports the pool Filling', async () => {
    pools.putPool('warm', { replicas: 3 });
    expect(await run()).toEqual({});
    expect(pools.ops.filter((o) => o.startsWith('createPod'))).toEqual([
      'createPod warm-0000000001',
      'createPod warm-0000000002',
      'createPod warm-0000000003',
    ]);
    expect(status()).toMatchObject({ observedGeneration: 1, replicas: 3, ready: 0, available: 0 });
    expect(condition('Ready')).toMatchObject({ status: 'False', reason: 'Filling' });
    expect(condition('Available')).toMatchObject({ status: 'False', reason: 'BelowMinReady' });
  });

  it('does nothing before the index has synced: a pool listed before its Pods is not refilled', async () => {
    // A restarted operator: the pool informer has listed, the Pod informer not yet.
    pools.index.markSynced(false);
    const pool = pools.putPool('warm', { replicas: 2 });
    expect(await run()).toEqual({});
    expect(pools.ops).toEqual([]);
    // The Pods listed: the pool is full, nothing to create.
    pools.putWarm(pool, 'warm-a', opts);
    pools.putWarm(pool, 'warm-b', opts);
    pools.index.markSynced();
    await run();
    expect(pools.ops.filter((o) => !o.startsWith('patchStatus'))).toEqual([]);
    expect(status()).toMatchObject({ replicas: 2, ready: 2, available: 2 });
  });

  it('reports the pool full and available once its Pods are Ready, and writes nothing more', async () => {
    const pool = pools.putPool('warm', { replicas: 2 });
    pools.putWarm(pool, 'warm-a', opts);
    pools.putWarm(pool, 'warm-b', opts);
    await run();
    expect(status()).toMatchObject({ replicas: 2, ready: 2, available: 2 });
    expect(condition('Ready')).toMatchObject({
      status: 'True',
      reason: 'PoolFull',
      message: '2 of 2 warm Pods available',
    });
    expect(condition('Available')).toMatchObject({ status: 'True', reason: 'MinReady' });
    pools.ops.length = 0;
    await run();
    expect(pools.ops).toEqual([]);
  });

  it('refills after a claim took one of its Pods', async () => {
    const pool = pools.putPool('warm', { replicas: 2 });
    pools.putWarm(pool, 'warm-a', opts);
    const b = pools.putWarm(pool, 'warm-b', opts);
    await pools.writer().claimPod(b, { namespace: 'team-a', name: 's', uid: 's-uid' });
    pools.ops.length = 0;
    await run();
    expect(pools.ops.filter((o) => o.startsWith('createPod'))).toEqual(['createPod warm-0000000001']);
  });

  it('replaces ended and outdated warm Pods, with exact preconditions', async () => {
    const pool = pools.putPool('warm', { replicas: 2 });
    const ended = pools.putWarm(pool, 'warm-a', opts);
    pools.store({ ...ended, phase: 'Failed' });
    const old = pools.putWarm(pool, 'warm-b', opts);
    pools.store({ ...old, templateHash: 'old' });
    await run();
    expect(pools.ops.filter((o) => !o.startsWith('patchStatus'))).toEqual([
      'deletePod warm-a exact',
      'deletePod warm-b exact',
      'createPod warm-0000000001',
      'createPod warm-0000000002',
    ]);
  });

  it('removes surplus warm Pods, not-Ready ones first, never a Pod claimed meanwhile', async () => {
    const pool = pools.putPool('warm', { replicas: 1 });
    pools.putWarm(pool, 'warm-a', opts);
    pools.putWarm(pool, 'warm-b', opts, false);
    pools.putWarm(pool, 'warm-c', opts);
    await run();
    expect(pools.ops.filter((o) => o.startsWith('deletePod'))).toEqual([
      'deletePod warm-b exact',
      'deletePod warm-a exact',
    ]);
  });

  it('does not delete a surplus Pod that changed since the index saw it (claimed: 409)', async () => {
    const pool = pools.putPool('warm', { replicas: 0 });
    const a = pools.putWarm(pool, 'warm-a', opts);
    const writer = pools.writer();
    // The index still holds the old version; the API server has the claimed one.
    deps = {
      ...deps,
      writer: {
        ...writer,
        deletePod: (pod, exact) =>
          writer.deletePod({ ...pod, metadata: { ...pod.metadata, resourceVersion: 'stale' } }, exact),
      },
    };
    await run();
    expect(pools.index.pod('team-a', 'warm-a')).toEqual(a);
    expect(pools.ops.filter((o) => o.startsWith('deletePod'))).toEqual([]);
  });

  it('fills a large pool in bounded passes, asking to run again', async () => {
    pools.putPool('warm', { replicas: 25 });
    expect(await run()).toEqual({ requeueAfterMs: 0 });
    expect(await run()).toEqual({ requeueAfterMs: 0 });
    expect(await run()).toEqual({});
    expect(pools.ops.filter((o) => o.startsWith('createPod'))).toHaveLength(25);
  });

  it('reports a quota refusal as Ready=False/QuotaExceeded and throws (retry with backoff)', async () => {
    pools.putPool('warm', { replicas: 1 });
    const writer = pools.writer();
    deps = {
      ...deps,
      writer: {
        ...writer,
        createPod: () =>
          Promise.reject(
            new QuotaRefusedError('Pod', 'warm-x', 'exceeded quota: sandbox, requested: pods=1'),
          ),
      },
    };
    await expect(run()).rejects.toThrow(QuotaRefusedError);
    expect(condition('Ready')).toMatchObject({ status: 'False', reason: 'QuotaExceeded' });
  });

  it("reports failing warm Pods with the first one's reason", async () => {
    const pool = pools.putPool('warm', { replicas: 1 });
    const a = pools.putWarm(pool, 'warm-a', opts, false);
    pools.store({
      ...a,
      containers: [{ name: 'sandbox', ready: false, restartCount: 0, waitingReason: 'ImagePullBackOff' }],
    });
    await run();
    expect(condition('Ready')).toMatchObject({ status: 'False', reason: 'PodsFailing' });
    expect(condition('Ready')?.message).toContain('ImagePullFailed');
  });

  it('honours minReady for the Available condition', async () => {
    const pool = pools.putPool('warm', { replicas: 3, minReady: 2 });
    pools.putWarm(pool, 'warm-a', opts);
    pools.putWarm(pool, 'warm-b', opts, false);
    pools.putWarm(pool, 'warm-c', opts, false);
    await run();
    expect(condition('Available')).toMatchObject({
      status: 'False',
      message: '1 warm Pods available, at least 2 wanted',
    });
  });

  it('does nothing for a pool that is gone', async () => {
    expect(await run()).toEqual({});
    expect(pools.ops).toEqual([]);
  });

  it('exports the pool size', async () => {
    const pool = pools.putPool('warm', { replicas: 2 });
    pools.putWarm(pool, 'warm-a', opts);
    pools.putWarm(pool, 'warm-b', opts, false);
    await run();
    const values = (await pools.metrics.pods.get()).values.map((v) => [v.labels.state, v.value]);
    expect(Object.fromEntries(values)).toEqual({ desired: 2, warm: 2, ready: 1, available: 1 });
  });

  it('waits while a claim of its warm Pods settles: no create, no status write, runs again after the hold', async () => {
    pools.putPool('warm', { replicas: 2 });
    const asked: string[] = [];
    let hold = 120;
    deps = {
      ...deps,
      holdMs: (ns, name) => {
        asked.push(`${ns}/${name}`);
        return hold;
      },
    };
    expect(await run()).toEqual({ requeueAfterMs: 120 });
    expect([pools.ops, pools.statuses]).toEqual([[], []]);
    hold = 0;
    expect(await run()).toEqual({});
    expect(pools.ops.filter((o) => o.startsWith('createPod'))).toHaveLength(2);
    expect(asked).toEqual(['team-a/warm', 'team-a/warm']);
  });
});

describe('reconcilePool with look-alike Pods (issue 25, ADR 0027)', () => {
  it('counts, replaces and deletes only exact warm Pods: a Pod naming the pool under sandbox.dev/v0, or from another namespace, is neither counted nor touched', async () => {
    const pool = pools.putPool('warm', { replicas: 1 });
    const lookalike = (name: string, namespace: string, apiVersion: string) =>
      pools.store({
        metadata: {
          name,
          namespace,
          uid: `u-${name}`,
          resourceVersion: '900',
          controller: { apiVersion, kind: 'SandboxPool', name: 'warm', uid: pool.metadata.uid },
        },
        pool: 'warm',
        templateHash: templateHash(pool, opts),
        phase: 'Running',
        podIP: '198.18.9.9',
        conditions: [{ type: 'Ready', status: 'True' }],
        containers: [],
      });
    lookalike('warm-bogus', 'team-a', 'sandbox.dev/v0');
    lookalike('warm-elsewhere', 'team-b', 'sandbox.dev/v1alpha1');
    await run();
    expect(pools.ops).toEqual(['createPod warm-0000000001', 'patchStatus warm']);
    expect(status()).toMatchObject({ replicas: 1, ready: 0, available: 0 });
  });
});
