/**
 * The Pod identity check (issue 25) as pure functions: which Pods tie a session's status to the
 * session, and the projection the Pod cache keeps. The routes' side (503, nothing dialed) is in
 * test/unit/routes/pod-identity.test.ts.
 */
import { describe, expect, it } from '@jest/globals';

import type { ExecTarget } from '../../../src/sessions/model.js';
import {
  POD_IDENTITY_REASON,
  checkPodIdentity,
  dialLookup,
  dialState,
  type PodLookup,
} from '../../../src/sessions/pod-identity.js';
import { projectPodRecord, type PodRecord } from '../../../src/sessions/pod-record.js';
import { podOf, ready, session } from '../../helpers/sessions.js';

const S = session('a', 'team-a', ready('10.0.0.7'));
const TARGET: ExecTarget = {
  namespace: 'team-a',
  name: 'a',
  uid: 'uid-a',
  podName: 'sbs-a',
  podIP: '10.0.0.7',
  transport: 'Agent',
  idleTimeoutSeconds: 1800,
};

function lookup(pods: PodRecord[], synced = true): PodLookup {
  const byKey = new Map(pods.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p]));
  return { podsSynced: () => synced, pod: (ns, name) => byKey.get(`${ns}/${name}`) };
}

describe('checkPodIdentity', () => {
  it("passes for the session's own Pod: same namespace, exact controller, Ready, its IP", () => {
    expect(checkPodIdentity(TARGET, lookup([podOf(S)]))).toBeUndefined();
    // Dual stack: status.podIP may be either family's address of the Pod.
    const dual = podOf(S, (p) => (p.podIPs = ['fd00::7', '10.0.0.7']));
    expect(checkPodIdentity(TARGET, lookup([dual]))).toBeUndefined();
  });

  const forged: Array<[string, PodRecord[], string, boolean?]> = [
    ['the Pod cache has not listed yet', [podOf(S)], 'cache-not-synced', false],
    ['no Pod of that name in the namespace', [], 'pod-not-found'],
    [
      "a Pod of that name in another tenant's namespace",
      [podOf(S, (p) => (p.metadata = { ...p.metadata, namespace: 'team-b' }))],
      'pod-not-found',
    ],
    [
      'a Pod without a controller',
      [podOf(S, (p) => (p.controller = undefined))],
      'not-controlled-by-session',
    ],
    [
      'a planted Pod whose controller names the session under a made-up apiVersion',
      [podOf(S, (p) => (p.controller = { ...p.controller, apiVersion: 'sandbox.dev/v0' }))],
      'not-controlled-by-session',
    ],
    [
      'a controller naming the session by UID only (another name)',
      [podOf(S, (p) => (p.controller = { ...p.controller, name: 'other' }))],
      'not-controlled-by-session',
    ],
    [
      'a controller with the right name and another UID (an earlier session of that name)',
      [podOf(S, (p) => (p.controller = { ...p.controller, uid: 'uid-old' }))],
      'not-controlled-by-session',
    ],
    [
      'a controller of another kind (a pool)',
      [podOf(S, (p) => (p.controller = { ...p.controller, kind: 'SandboxPool' }))],
      'not-controlled-by-session',
    ],
    ['a Pod that is not Ready', [podOf(S, (p) => (p.ready = false))], 'pod-not-ready'],
    ['a Pod being deleted', [podOf(S, (p) => (p.deleting = true))], 'pod-terminating'],
    ['a Pod on the host network', [podOf(S, (p) => (p.hostNetwork = true))], 'host-network'],
    [
      "status.podIP forged to another Pod's IP",
      [podOf(S, (p) => (p.podIPs = ['10.0.0.99']))],
      'pod-ip-mismatch',
    ],
    ['a Pod without an IP yet', [podOf(S, (p) => (p.podIPs = []))], 'pod-ip-mismatch'],
  ];
  it.each(forged)('refuses %s', (_what, pods, failure, synced = true) => {
    expect(checkPodIdentity(TARGET, lookup(pods, synced))).toBe(failure);
  });

  it('refuses a status that names no Pod', () => {
    expect(checkPodIdentity({ ...TARGET, podName: '' }, lookup([podOf(S)]))).toBe('no-pod-name');
  });
});

describe('dialState', () => {
  const on = { address: { allowLoopback: false }, podIdentityCheck: true };

  it('keeps a verified session ready', () => {
    expect(dialState(S, lookup([podOf(S)]), on)).toMatchObject({ kind: 'ready', target: TARGET });
  });

  it('makes an unverified Ready session pending with reason PodIdentityUnverified', () => {
    const state = dialState(S, lookup([podOf(S, (p) => (p.podIPs = ['10.0.0.99']))]), on);
    expect(state).toEqual({
      kind: 'pending',
      reason: POD_IDENTITY_REASON,
      message: 'the pod IP in the session status is not the IP of the Pod it names',
    });
  });

  it('leaves sessions that are not Ready as sessionState has them', () => {
    const deleting = session('d', 'team-a', ready(), (x) => (x.metadata.deletionTimestamp = 'x'));
    expect(dialState(deleting, lookup([]), on)).toMatchObject({ kind: 'gone', reason: 'Terminating' });
  });

  it('with the check off (the benchmark only), dials whatever the status names', () => {
    expect(dialState(S, lookup([], false), { ...on, podIdentityCheck: false }).kind).toBe('ready');
  });
});

describe('dialLookup (the address at dial time)', () => {
  const policy = { address: { allowLoopback: false }, podIdentityCheck: true };
  const store = (s: typeof S, pods: PodRecord[]): Parameters<typeof dialLookup>[0] => ({
    ...lookup(pods),
    get: (ns, name) => (ns === s.metadata.namespace && name === s.metadata.name ? s : undefined),
  });

  it("gives the verified IP, and nothing once the status is forged or the session's uid changed", () => {
    expect(dialLookup(store(S, [podOf(S)]), policy)(TARGET)).toBe('10.0.0.7');
    const forged = session('a', 'team-a', ready('10.0.0.99'));
    expect(dialLookup(store(forged, [podOf(S)]), policy)(TARGET)).toBeUndefined();
    expect(dialLookup(store(S, [podOf(S)]), policy)({ ...TARGET, uid: 'uid-old' })).toBeUndefined();
  });
});

describe('projectPodRecord', () => {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'sbs-a',
      namespace: 'team-a',
      uid: 'pu',
      resourceVersion: '7',
      labels: { 'sandbox.dev/session': 'a' },
      annotations: { big: 'x'.repeat(100_000) },
      ownerReferences: [
        { apiVersion: 'v1', kind: 'Other', name: 'o', uid: 'ou' },
        {
          apiVersion: 'sandbox.dev/v1alpha1',
          kind: 'SandboxSession',
          name: 'a',
          uid: 'uid-a',
          controller: true,
        },
      ],
    },
    spec: { containers: [{ name: 'sandbox', image: 'x', env: [{ name: 'E', value: 'y'.repeat(10_000) }] }] },
    status: {
      podIP: '10.0.0.7',
      podIPs: [{ ip: '10.0.0.7' }, { ip: 'fd00::7' }],
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
    },
  };

  it('keeps identity, controller, addresses, readiness, deletion and host network only', () => {
    const view = projectPodRecord(pod);
    expect(view).toEqual({
      metadata: { name: 'sbs-a', namespace: 'team-a', uid: 'pu', resourceVersion: '7' },
      controller: { apiVersion: 'sandbox.dev/v1alpha1', kind: 'SandboxSession', name: 'a', uid: 'uid-a' },
      podIPs: ['10.0.0.7', 'fd00::7'],
      ready: true,
      deleting: false,
      hostNetwork: false,
    });
    expect(JSON.stringify(view).length).toBeLessThan(400);
  });

  it('reads deletion, host network and a Ready condition that is not True', () => {
    const view = projectPodRecord({
      ...pod,
      metadata: { ...pod.metadata, deletionTimestamp: new Date() },
      spec: { hostNetwork: true },
      status: { conditions: [{ type: 'Ready', status: 'False' }] },
    });
    expect(view).toMatchObject({ ready: false, deleting: true, hostNetwork: true, podIPs: [] });
  });

  it('bounds hostile input: at most 4 addresses, no oversized strings, no throw on junk', () => {
    const many = {
      ...pod,
      status: { podIPs: Array.from({ length: 1000 }, (_, i) => ({ ip: `10.1.0.${i}` })) },
    };
    expect(projectPodRecord(many)!.podIPs).toHaveLength(4);
    const longRef = {
      ...pod,
      metadata: {
        ...pod.metadata,
        ownerReferences: [{ controller: true, kind: 'SandboxSession', name: 'n'.repeat(300) }],
      },
    };
    expect(projectPodRecord(longRef)!.controller).toEqual({ kind: 'SandboxSession' });
    for (const junk of [null, 1, 'x', [], {}, { metadata: { name: 'x' } }, { metadata: 7 }]) {
      expect(projectPodRecord(junk)).toBeUndefined();
    }
  });
});
