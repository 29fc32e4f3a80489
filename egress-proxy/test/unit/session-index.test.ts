/**
 * The session index keeps projections, not objects (kube/watch.ts: a proxy that cached whole
 * sessions and Pods of 10,000 sessions, from one unpaged LIST, died of heap exhaustion at start),
 * and the projections keep everything the address check needs: a Pod whose controller reference
 * is not exactly the session's still maps to nobody. A session's rules are one array while its
 * spec.egress is unchanged (the proxy's decisions are cached per array: rules.ts).
 */
import { describe, expect, it, jest } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import { pagedList, type ListPage } from '../../src/kube/watch.js';
import {
  podView,
  SessionIndex,
  sessionView,
  type PodView,
  type SessionIndexOptions,
  type SessionView,
} from '../../src/kube/session-index.js';
import { DecisionCache, type EgressRule } from '../../src/rules.js';

const SESSION_API = 'sandbox.dev/v1alpha1';

/** A Pod as the API server sends it, with the bulk a real one carries. */
function pod(name: string, ip: string, owner: Partial<k8s.V1OwnerReference> = {}): k8s.V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      namespace: 'team-a',
      name,
      uid: `pod-${name}`,
      resourceVersion: '7',
      labels: { 'app.kubernetes.io/component': 'sandbox' },
      annotations: { 'sandbox.dev/image': 'x'.repeat(2000) },
      managedFields: [
        { manager: 'sandbox-operator', operation: 'Apply', fieldsV1: { big: 'y'.repeat(4000) } },
      ],
      ownerReferences: [
        { apiVersion: 'v1', kind: 'ConfigMap', name: 'not-the-controller', uid: 'cm' },
        {
          apiVersion: SESSION_API,
          kind: 'SandboxSession',
          name: 's1',
          uid: 'u1',
          controller: true,
          blockOwnerDeletion: true,
          ...owner,
        },
      ],
    },
    spec: { containers: [{ name: 'agent', image: 'a', env: [{ name: 'E', value: 'z'.repeat(1000) }] }] },
    status: {
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

const SESSION = {
  apiVersion: SESSION_API,
  kind: 'SandboxSession',
  metadata: {
    namespace: 'team-a',
    name: 's1',
    uid: 'u1',
    resourceVersion: '3',
    managedFields: [{ manager: 'm' }],
  },
  spec: { image: 'i', env: [{ name: 'A', value: 'b' }], egress: { rules: [{ host: 'pypi.org' }] } },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
};

interface Fixture {
  readonly index: SessionIndex;
  readonly upsertSession: (s: SessionView) => void;
  readonly upsertPod: (p: PodView) => void;
  readonly removePod: (p: PodView) => void;
}

function fixture(opts: Partial<Pick<SessionIndexOptions, 'defaults' | 'onRulesChanged'>> = {}): Fixture {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const index = new SessionIndex({
    kc,
    namespaces: ['team-a'],
    defaults: opts.defaults ?? {},
    onRulesChanged: opts.onRulesChanged ?? (() => undefined),
    log: { info: () => undefined, warn: () => undefined },
  });
  // The watch callbacks, as the index's RestartingWatches call them.
  const inner = index as unknown as Record<
    'upsertSession' | 'upsertPod' | 'removePod',
    (this: SessionIndex, view: SessionView & PodView) => void
  >;
  return {
    index,
    upsertSession: (s) => inner.upsertSession.call(index, s as SessionView & PodView),
    upsertPod: (p) => inner.upsertPod.call(index, p as SessionView & PodView),
    removePod: (p) => inner.removePod.call(index, p as SessionView & PodView),
  };
}

describe('projections', () => {
  it('keep a session identity and spec.egress only', () => {
    expect(sessionView(SESSION)).toEqual({
      metadata: { namespace: 'team-a', name: 's1', uid: 'u1', resourceVersion: '3' },
      spec: { egress: { rules: [{ host: 'pypi.org' }] } },
    });
    expect(sessionView({ ...SESSION, spec: {} })).toEqual({
      metadata: { namespace: 'team-a', name: 's1', uid: 'u1', resourceVersion: '3' },
      spec: {},
    });
    expect(sessionView({ metadata: {} })).toBeUndefined();
    expect(sessionView(undefined)).toBeUndefined();
  });

  it('keep a Pod name, addresses, phase and its controller reference only', () => {
    const raw = pod('p1', '10.0.0.5');
    const view = podView(raw)!;
    expect(view).toEqual({
      metadata: {
        namespace: 'team-a',
        name: 'p1',
        resourceVersion: '7',
        ownerReferences: [
          { apiVersion: SESSION_API, kind: 'SandboxSession', name: 's1', uid: 'u1', controller: true },
        ],
      },
      status: { phase: 'Running', podIPs: [{ ip: '10.0.0.5' }] },
    });
    // A fraction of the object (the real ones carry spec, managedFields and status besides).
    expect(JSON.stringify(view).length * 20).toBeLessThan(JSON.stringify(raw).length);
    const deleting = podView({ ...raw, metadata: { ...raw.metadata, deletionTimestamp: new Date(0) } })!;
    expect(deleting.metadata.deletionTimestamp).toBeDefined();
    expect(
      podView({ ...raw, metadata: { ...raw.metadata, ownerReferences: undefined } })!.metadata,
    ).not.toHaveProperty('ownerReferences');
  });
});

describe('the index on projections', () => {
  it('maps an address to the session whose Pod it is, exactly as on whole objects', () => {
    const { index: idx, upsertSession, upsertPod } = fixture();
    upsertSession(sessionView(SESSION)!);
    upsertPod(podView(pod('p1', '10.0.0.5'))!);
    expect(idx.byAddress('10.0.0.5')).toEqual({ namespace: 'team-a', name: 's1', uid: 'u1' });
    // A planted Pod naming the session with another uid or kind maps to nobody.
    upsertPod(podView(pod('planted', '10.0.0.6', { uid: 'forged' }))!);
    upsertPod(podView(pod('planted-kind', '10.0.0.7', { kind: 'Other' }))!);
    // Exactly the session's reference, but not as the Pod's controller: nobody's either.
    upsertPod(podView(pod('planted-owner', '10.0.0.8', { controller: false }))!);
    expect(idx.byAddress('10.0.0.6')).toBeUndefined();
    expect(idx.byAddress('10.0.0.7')).toBeUndefined();
    expect(idx.byAddress('10.0.0.8')).toBeUndefined();
    // Two live Pods on one address: nobody's.
    upsertPod(podView(pod('p2', '10.0.0.5'))!);
    expect(idx.byAddress('10.0.0.5')).toBeUndefined();
  });

  it('moves a Pod whose address changed and forgets a deleted or finished one', () => {
    const { index: idx, upsertSession, upsertPod, removePod } = fixture();
    upsertSession(sessionView(SESSION)!);
    upsertPod(podView(pod('p1', '10.0.0.5'))!);
    upsertPod(podView(pod('p1', '10.0.0.9'))!);
    expect(idx.byAddress('10.0.0.5')).toBeUndefined();
    expect(idx.byAddress('10.0.0.9')).toEqual({ namespace: 'team-a', name: 's1', uid: 'u1' });
    const finished = pod('p1', '10.0.0.9');
    finished.status!.phase = 'Succeeded';
    upsertPod(podView(finished)!);
    expect(idx.byAddress('10.0.0.9')).toBeUndefined();
    upsertPod(podView(pod('p1', '10.0.0.9'))!);
    removePod(podView(pod('p1', '10.0.0.9'))!);
    expect(idx.byAddress('10.0.0.9')).toBeUndefined();
  });
});

describe('rule sets', () => {
  const id = { namespace: 'team-a', name: 's1', uid: 'u1' };
  const session = (rules: EgressRule[], phase = 'Running'): SessionView =>
    sessionView({ ...SESSION, spec: { egress: { rules } }, status: { phase } })!;

  it('are one array while the rules are unchanged, a new one when they change', () => {
    const changed = jest.fn();
    const { index, upsertSession } = fixture({
      defaults: { '*': [{ host: 'default.test' }] },
      onRulesChanged: changed,
    });
    upsertSession(session([{ host: 'pypi.org' }]));
    const first = index.rules(id);
    expect(first.map((r) => r.host)).toEqual(['pypi.org', 'default.test']);
    expect(index.rules(id)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    // A status update with the same rules: the same array (cached decisions stay valid).
    upsertSession(session([{ host: 'pypi.org' }], 'Suspended'));
    expect(index.rules(id)).toBe(first);
    expect(changed).not.toHaveBeenCalled();
    // Changed rules: a new array, so the proxy's DecisionCache decides again.
    upsertSession(session([{ host: 'github.com' }]));
    const second = index.rules(id);
    expect(second).not.toBe(first);
    expect(second.map((r) => r.host)).toEqual(['github.com', 'default.test']);
    expect(changed).toHaveBeenCalledTimes(1);
    const cache = new DecisionCache();
    expect(cache.decide(first, 'pypi.org', 443).allowed).toBe(true);
    expect(cache.decide(second, 'pypi.org', 443).allowed).toBe(false);
    // Another uid (the session was recreated): no rules.
    expect(index.rules({ ...id, uid: 'other' })).toEqual([]);
  });
});

describe('pagedList', () => {
  it('asks page after page, projects each, and watches from the first page resourceVersion', async () => {
    const asked: Array<[number, string | undefined]> = [];
    const pages: Record<string, ListPage> = {
      first: { items: [SESSION, { metadata: {} }], metadata: { resourceVersion: '100', continue: 'b' } },
      b: {
        items: [{ ...SESSION, metadata: { ...SESSION.metadata, name: 's2' } }],
        metadata: { _continue: 'c' },
      },
      c: { items: [], metadata: { resourceVersion: '999' } },
    };
    const list = await pagedList({
      listPage: (limit, cont) => {
        asked.push([limit, cont]);
        return Promise.resolve(pages[cont ?? 'first']!);
      },
      project: (raw) => sessionView(raw) as unknown as k8s.KubernetesObject | undefined,
    });
    expect(asked).toEqual([
      [500, undefined],
      [500, 'b'],
      [500, 'c'],
    ]);
    expect(list.metadata?.resourceVersion).toBe('100');
    expect(list.items.map((i) => i.metadata?.name)).toEqual(['s1', 's2']);
    expect(list.items[0]).not.toHaveProperty('status');
  });
});
