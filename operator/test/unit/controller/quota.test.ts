/**
 * A ResourceQuota refusing a session's Pod or Secret: a stable Ready reason (QuotaExceeded) with
 * the API server's message, one Warning event, a retry with backoff (the reconcile throws), and
 * nothing else: no error status of its own, no repeated writes while the quota stays full.
 */
import { beforeEach, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import type { SandboxSession } from '@sandbox-platform/api';

import { reconcile } from '../../../src/controller/reconcile.js';
import type { ControllerDeps } from '../../../src/controller/scope.js';
import { createPodStore } from '../../../src/kube/child-stores.js';
import { isQuotaRefused, QuotaRefusedError, quotaRefusal } from '../../../src/kube/errors.js';
import type { JsonClient } from '../../../src/kube/json-client.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakeClock, controllerDeps, type MemoryObserver } from '../../fakes/fakes.js';
import { session } from '../../fixtures/sessions.js';

const KEY = { namespace: 'team-a', name: 'demo' };
const EXCEEDED =
  'pods "sbs-demo" is forbidden: exceeded quota: sandbox-platform-sandboxes, requested: pods=1, used: pods=2, limited: pods=2';
const MISSING_LIMIT =
  'pods "sbs-demo" is forbidden: failed quota: sandbox-platform-sandboxes: must specify limits.memory for: sandbox';

/** What client-node throws for a refused request: an ApiException with a Status body. */
function apiError(code: number, message: string, reason = 'Forbidden'): k8s.ApiException<string> {
  const body = JSON.stringify({ kind: 'Status', status: 'Failure', reason, message, code });
  return new k8s.ApiException(code, `HTTP ${code}`, body, {});
}

let cluster: FakeCluster;
let deps: ControllerDeps & { observer: MemoryObserver };

beforeEach(() => {
  cluster = new FakeCluster();
  deps = controllerDeps(cluster, new FakeClock(Date.parse('2030-01-01T00:00:10Z')));
});

function ready(s: SandboxSession | undefined): Record<string, unknown> | undefined {
  return s?.status?.conditions?.find((c) => c.type === 'Ready');
}

describe('quotaRefusal', () => {
  it('recognises both refusals of the quota admission', () => {
    expect(quotaRefusal(apiError(403, EXCEEDED))).toBe(EXCEEDED);
    expect(quotaRefusal(apiError(403, MISSING_LIMIT))).toBe(MISSING_LIMIT);
  });

  it('leaves other 403s (RBAC, admission policies) and other codes alone', () => {
    const rbac = 'pods is forbidden: User "system:serviceaccount:x:y" cannot create resource "pods"';
    expect(quotaRefusal(apiError(403, rbac))).toBeUndefined();
    expect(quotaRefusal(apiError(422, EXCEEDED, 'Invalid'))).toBeUndefined();
    expect(quotaRefusal(new Error(EXCEEDED))).toBeUndefined();
  });

  it('bounds the message it keeps (it ends up in the status)', () => {
    expect(quotaRefusal(apiError(403, `${EXCEEDED}${'x'.repeat(5000)}`))?.length).toBe(1024);
  });
});

describe('the Pod store', () => {
  it('turns a quota refusal of a create into QuotaRefusedError, with the API error as cause', async () => {
    const refused = apiError(403, EXCEEDED);
    const json = {
      create: () => Promise.reject(refused),
    } as unknown as JsonClient;
    const store = createPodStore({ core: {} as k8s.CoreV1Api, json }, { get: () => undefined });
    const err = await store.create('team-a', { metadata: { name: 'sbs-demo' } }).catch((e: unknown) => e);
    expect(isQuotaRefused(err)).toBe(true);
    expect(err).toMatchObject({ kind: 'Pod', objectName: 'sbs-demo', quotaMessage: EXCEEDED });
    expect((err as Error).cause).toBe(refused);
  });
});

describe('reconcile: a ResourceQuota refuses a child', () => {
  it('Pod refused: Ready=False/QuotaExceeded with the quota message, phase Pending, one Warning event', async () => {
    cluster.putSession(session());
    cluster.failNext.set('createPod', new QuotaRefusedError('Pod', 'sbs-demo', EXCEEDED));
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(QuotaRefusedError);
    const s = cluster.session();
    expect(ready(s)).toMatchObject({ status: 'False', reason: 'QuotaExceeded' });
    expect(String(ready(s)?.message)).toBe(`Pod sbs-demo was refused by a ResourceQuota: ${EXCEEDED}`);
    expect(s?.status?.phase).toBe('Pending');
    expect(cluster.events.map((e) => [e.event.type, e.event.reason])).toEqual([
      ['Normal', 'CreatedSecret'],
      ['Warning', 'QuotaExceeded'],
    ]);
    expect(deps.observer.reasons.get('team-a/demo')).toBe('QuotaExceeded');
  });

  it('stays stable while the quota is full: no second status write, no second event', async () => {
    cluster.putSession(session());
    cluster.failNext.set('createPod', new QuotaRefusedError('Pod', 'sbs-demo', EXCEEDED));
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(QuotaRefusedError);
    cluster.writes.length = 0;
    const events = cluster.events.length;
    cluster.failNext.set('createPod', new QuotaRefusedError('Pod', 'sbs-demo', EXCEEDED));
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(QuotaRefusedError);
    expect(cluster.writes).toEqual([]);
    expect(cluster.events.length).toBe(events);
  });

  it('provisions once the quota has room', async () => {
    cluster.putSession(session());
    cluster.failNext.set('createPod', new QuotaRefusedError('Pod', 'sbs-demo', EXCEEDED));
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(QuotaRefusedError);
    await reconcile(KEY, deps);
    expect(cluster.writes).toContain('createPod sbs-demo');
    expect(ready(cluster.session())).toMatchObject({ status: 'False', reason: 'PodPending' });
  });

  it('Secret refused: the same reason, naming the Secret, and no Pod', async () => {
    cluster.putSession(session());
    const message = 'secrets "sbs-demo-token" is forbidden: exceeded quota: q, requested: count/secrets=1';
    cluster.failNext.set('createSecret', new QuotaRefusedError('Secret', 'sbs-demo-token', message));
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(QuotaRefusedError);
    expect(ready(cluster.session())).toMatchObject({ status: 'False', reason: 'QuotaExceeded' });
    expect(String(ready(cluster.session())?.message)).toMatch(/^Secret sbs-demo-token was refused/);
    expect(cluster.writes).toEqual(['patchStatus demo']);
  });
});
