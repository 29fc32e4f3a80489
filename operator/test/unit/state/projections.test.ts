import { describe, expect, it } from '@jest/globals';

import { ownerKey } from '../../../src/state/owner-key.js';
import { projectClaim, projectPod, projectSecret } from '../../../src/state/projections.js';

const owner = {
  apiVersion: 'sandbox.dev/v1alpha1',
  kind: 'SandboxSession',
  name: 'demo',
  uid: 'u1',
  controller: true,
};

describe('projectPod', () => {
  it('keeps identity, ownership and the state readiness needs, from watch JSON', () => {
    const view = projectPod({
      metadata: {
        name: 'sbs-demo',
        namespace: 'ns',
        uid: 'p1',
        resourceVersion: '7',
        labels: { 'sandbox.dev/session': 'demo' },
        ownerReferences: [{ ...owner, controller: false, uid: 'x' }, owner],
        deletionTimestamp: '2030-01-01T00:00:00Z',
        managedFields: [{ big: 'x'.repeat(1000) }],
      },
      spec: { nodeName: 'n1', containers: [{ name: 'sandbox', env: [{ name: 'SANDBOX_TOKEN' }] }] },
      status: {
        phase: 'Running',
        podIP: '198.18.0.9',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 'x' }],
        containerStatuses: [
          {
            name: 'sandbox',
            ready: true,
            restartCount: 2,
            state: { waiting: { reason: 'CrashLoopBackOff', message: 'm' } },
          },
        ],
      },
    });
    expect(view).toEqual({
      metadata: {
        name: 'sbs-demo',
        namespace: 'ns',
        uid: 'p1',
        resourceVersion: '7',
        deletionTimestamp: '2030-01-01T00:00:00Z',
        sessionLabel: 'demo',
        controller: { apiVersion: 'sandbox.dev/v1alpha1', kind: 'SandboxSession', name: 'demo', uid: 'u1' },
      },
      phase: 'Running',
      reason: undefined,
      message: undefined,
      podIP: '198.18.0.9',
      nodeName: 'n1',
      conditions: [{ type: 'Ready', status: 'True', reason: undefined, message: undefined }],
      containers: [
        {
          name: 'sandbox',
          ready: true,
          restartCount: 2,
          waitingReason: 'CrashLoopBackOff',
          waitingMessage: 'm',
          terminatedReason: undefined,
        },
      ],
    });
  });

  it('accepts client-node model objects with Date fields', () => {
    const view = projectPod({
      metadata: {
        name: 'a',
        namespace: 'ns',
        uid: 'u',
        resourceVersion: '1',
        deletionTimestamp: new Date(0),
      },
    });
    expect(view?.metadata.deletionTimestamp).toBe('1970-01-01T00:00:00.000Z');
  });

  it('skips objects without identity instead of throwing', () => {
    expect(projectPod({ metadata: { name: 'a' } })).toBeUndefined();
    expect(projectPod(null)).toBeUndefined();
    expect(projectPod('garbage')).toBeUndefined();
  });
});

describe('projectSecret', () => {
  it('keeps the session-uid annotation and never the data', () => {
    const view = projectSecret({
      metadata: {
        name: 's',
        namespace: 'ns',
        uid: 'u',
        resourceVersion: '1',
        annotations: { 'sandbox.dev/session-uid': 'u1' },
      },
      data: { token: 'c2VjcmV0' },
      stringData: { token: 'secret' },
    });
    expect(view?.sessionUID).toBe('u1');
    expect(JSON.stringify(view)).not.toMatch(/c2VjcmV0|secret"/);
  });
});

describe('projectClaim', () => {
  it('keeps identity, creation time, phase, class and volume', () => {
    expect(
      projectClaim({
        metadata: {
          name: 'sbs-demo-workspace',
          namespace: 'ns',
          uid: 'c1',
          resourceVersion: '9',
          creationTimestamp: '2030-01-01T00:00:00Z',
          ownerReferences: [owner],
          managedFields: [{ big: 'x'.repeat(1000) }],
        },
        spec: {
          storageClassName: 'local-path',
          volumeName: 'pvc-1',
          resources: { requests: { storage: '1Gi' } },
        },
        status: { phase: 'Bound', capacity: { storage: '1Gi' } },
      }),
    ).toEqual({
      metadata: {
        name: 'sbs-demo-workspace',
        namespace: 'ns',
        uid: 'c1',
        resourceVersion: '9',
        deletionTimestamp: undefined,
        sessionLabel: undefined,
        controller: { apiVersion: 'sandbox.dev/v1alpha1', kind: 'SandboxSession', name: 'demo', uid: 'u1' },
      },
      createdAt: '2030-01-01T00:00:00Z',
      phase: 'Bound',
      storageClassName: 'local-path',
      volumeName: 'pvc-1',
    });
  });

  it('accepts a Date creation time (client-node models) and skips objects without identity', () => {
    const view = projectClaim({
      metadata: {
        name: 'c',
        namespace: 'ns',
        uid: 'u',
        resourceVersion: '1',
        creationTimestamp: new Date(0),
      },
    });
    expect(view?.createdAt).toBe('1970-01-01T00:00:00.000Z');
    expect(projectClaim({ metadata: { name: 'c' } })).toBeUndefined();
  });
});

describe('ownerKey', () => {
  it('maps a child to its session by controller ref, else by label', () => {
    const meta = { name: 'x', namespace: 'ns', uid: 'u', resourceVersion: '1' };
    expect(
      ownerKey({
        ...meta,
        controller: { apiVersion: 'sandbox.dev/v1alpha1', kind: 'SandboxSession', name: 'demo', uid: 'u1' },
      }),
    ).toBe('ns/demo');
    expect(ownerKey({ ...meta, sessionLabel: 'other' })).toBe('ns/other');
    expect(
      ownerKey({ ...meta, controller: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u' } }),
    ).toBeUndefined();
  });
});
