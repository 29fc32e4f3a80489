/**
 * A Pod this operator deleted reads as being deleted until the informer shows it (regression: E2B's
 * pause then connect, found by the in-cluster e2e on a fresh clone: the resume found the deleted
 * Pod still Ready in the cache, reported the session Ready on it, and its next command failed when
 * the kubelet stopped that Pod).
 */
import { describe, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';

import type { ChildApi } from '../../../src/kube/child-stores.js';
import { createPodStore } from '../../../src/kube/child-stores.js';
import { CreatedOverlay } from '../../../src/state/created-overlay.js';
import { DELETED_TTL_MS, DeletedOverlay } from '../../../src/state/deleted-overlay.js';
import type { PodView } from '../../../src/state/views.js';
import { podView, ready } from '../../fixtures/pods.js';

describe('DeletedOverlay', () => {
  it('marks the deleted object until the informer shows the deletion, the object gone, or another object', () => {
    let now = 0;
    const o = new DeletedOverlay<PodView>(() => now);
    const live = podView(ready);
    expect(o.get('team-a', live.metadata.name, live)).toBe(live);
    o.add('team-a', live.metadata.name, live.metadata.uid);
    expect(o.get('team-a', live.metadata.name, live)?.metadata.deletionTimestamp).toBe(
      new Date(0).toISOString(),
    );
    const seen = { ...live, metadata: { ...live.metadata, deletionTimestamp: '2030-01-01T00:00:00Z' } };
    expect(o.get('team-a', live.metadata.name, seen)).toBe(seen);
    expect(o.size).toBe(0);

    o.add('team-a', live.metadata.name, live.metadata.uid);
    const other = { ...live, metadata: { ...live.metadata, uid: 'pod-uid-2' } };
    expect(o.get('team-a', live.metadata.name, other)).toBe(other);
    o.add('team-a', live.metadata.name, live.metadata.uid);
    expect(o.get('team-a', live.metadata.name, undefined)).toBeUndefined();
    o.add('team-a', live.metadata.name, live.metadata.uid);
    now = DELETED_TTL_MS;
    expect(o.get('team-a', live.metadata.name, live)).toBe(live);
  });
});

describe('the Pod store after a delete', () => {
  it('reads the deleted Pod as being deleted while the informer still shows it live; a failed delete marks nothing', async () => {
    const live = podView(ready);
    let fail = false;
    const core = {
      deleteNamespacedPod: () => (fail ? Promise.reject(new Error('boom')) : Promise.resolve({})),
    } as unknown as k8s.CoreV1Api;
    const store = createPodStore(
      { core, json: {} } as unknown as ChildApi,
      { get: () => live },
      new CreatedOverlay<PodView>(),
    );
    expect(store.cached('team-a', live.metadata.name)?.metadata.deletionTimestamp).toBeUndefined();
    fail = true;
    await expect(store.delete('team-a', live.metadata.name, live.metadata.uid)).rejects.toThrow('boom');
    expect(store.cached('team-a', live.metadata.name)?.metadata.deletionTimestamp).toBeUndefined();
    fail = false;
    await expect(store.delete('team-a', live.metadata.name, live.metadata.uid)).resolves.toBe('done');
    expect(store.cached('team-a', live.metadata.name)?.metadata.deletionTimestamp).toEqual(
      expect.any(String),
    );
  });
});
