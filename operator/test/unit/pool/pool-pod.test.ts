/**
 * The warm Pod builder: the Pod a session's template makes, minus the token, plus the bind
 * settings; owned by the pool; and a template hash that changes exactly when the Pod would.
 */
import { describe, expect, it } from '@jest/globals';
import { bindSigner } from '@sandbox-platform/api';

import { buildPod } from '../../../src/resources/pod.js';
import {
  buildPoolPod,
  poolPodName,
  TemplateHashes,
  templateHash,
  templateSpec,
} from '../../../src/pool/pool-pod.js';
import type { PoolView } from '../../../src/pool/pool-view.js';
import { controllerDeps, FakeClock, MASTER_KEY } from '../../fakes/fakes.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';

const podOptions = controllerDeps(new FakeCluster(), new FakeClock(0)).podOptions;
const opts = { podOptions, bindKeyHex: bindSigner(MASTER_KEY).publicKeyHex };

function pool(template: PoolView['spec']['template'] = {}): PoolView {
  return {
    metadata: { name: 'warm', namespace: 'team-a', uid: 'pool-uid', resourceVersion: '1', generation: 1 },
    spec: { replicas: 3, template },
  };
}

describe('buildPoolPod', () => {
  const pod = buildPoolPod(
    pool({ image: 'img:1', env: [{ name: 'A', value: 'b' }] }),
    'warm-abcdefghij',
    'h1',
    opts,
  );
  const container = pod.spec!.containers[0]!;

  it('is owned by the pool, labelled for the informers and NetworkPolicies, annotated with the hash', () => {
    expect(pod.metadata).toEqual({
      name: 'warm-abcdefghij',
      namespace: 'team-a',
      labels: {
        'app.kubernetes.io/managed-by': 'sandbox-operator',
        'app.kubernetes.io/component': 'sandbox',
        'sandbox.dev/pool': 'warm',
      },
      annotations: { 'sandbox.dev/pool-template-hash': 'h1' },
      ownerReferences: [
        {
          apiVersion: 'sandbox.dev/v1alpha1',
          kind: 'SandboxPool',
          name: 'warm',
          uid: 'pool-uid',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
  });

  it('holds no token: no SANDBOX_TOKEN, no Secret volume', () => {
    expect(container.env?.map((e) => e.name)).not.toContain('SANDBOX_TOKEN');
    expect(pod.spec!.volumes?.some((v) => v.secret)).toBe(false);
    expect(JSON.stringify(pod)).not.toContain('secretKeyRef');
  });

  it('gives the agent the public bind key and its own identity from the downward API', () => {
    const env = Object.fromEntries(
      (container.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom?.fieldRef?.fieldPath]),
    );
    expect(env).toMatchObject({
      SANDBOX_AGENT_BIND_KEY: opts.bindKeyHex,
      SANDBOX_AGENT_POD_NAMESPACE: 'metadata.namespace',
      SANDBOX_AGENT_POD_NAME: 'metadata.name',
      SANDBOX_AGENT_POD_UID: 'metadata.uid',
      SANDBOX_ENV_A: 'b',
      HOME: '/workspace',
    });
  });

  it('keeps the bind state in a small writable memory emptyDir where the token would be', () => {
    // 5Mi: the kept request (at most MAX_BIND_BODY_BYTES, 2 MiB, with the env) and its temporary copy.
    expect(pod.spec!.volumes?.find((v) => v.name === 'token')).toEqual({
      name: 'token',
      emptyDir: { medium: 'Memory', sizeLimit: '5Mi' },
    });
    expect(container.volumeMounts?.find((m) => m.name === 'token')).toEqual({
      name: 'token',
      mountPath: '/var/run/sandbox',
    });
  });

  it('is otherwise the Pod of a session with the template as its spec (security, probes, resources)', () => {
    const cold = buildPod(
      {
        metadata: { name: 'x', namespace: 'team-a', uid: 'u' },
        spec: templateSpec(pool({ image: 'img:1', env: [{ name: 'A', value: 'b' }] })),
      },
      { namespace: 'team-a', name: 'x', uid: 'u' },
      podOptions,
    );
    const coldContainer = cold.spec!.containers[0]!;
    expect(pod.spec!.securityContext).toEqual(cold.spec!.securityContext);
    expect(container.securityContext).toEqual(coldContainer.securityContext);
    expect(container.readinessProbe).toEqual(coldContainer.readinessProbe);
    expect(container.resources).toEqual(coldContainer.resources);
    expect(container.image).toBe('img:1');
    expect(pod.spec!.automountServiceAccountToken).toBe(false);
  });
});

describe('templateHash', () => {
  it('is stable for the same template, and changes with the template, the defaults and the bind key', () => {
    const base = templateHash(pool({ image: 'a' }), opts);
    expect(templateHash(pool({ image: 'a' }), opts)).toBe(base);
    expect(templateHash(pool({ image: 'b' }), opts)).not.toBe(base);
    expect(
      templateHash(pool({ image: 'a' }), { ...opts, podOptions: { ...podOptions, tmpSize: '128Mi' } }),
    ).not.toBe(base);
    expect(
      templateHash(pool({ image: 'a' }), {
        ...opts,
        bindKeyHex: bindSigner(Buffer.alloc(32, 9)).publicKeyHex,
      }),
    ).not.toBe(base);
  });

  it('does not depend on replicas (scaling keeps the warm Pods)', () => {
    const p = pool({ image: 'a' });
    expect(templateHash({ ...p, spec: { ...p.spec, replicas: 7 } }, opts)).toBe(templateHash(p, opts));
  });
});

describe('poolPodName', () => {
  it('is <pool>-<10 base-36 characters>', () => {
    expect(poolPodName('warm')).toMatch(/^warm-[a-z0-9]{10}$/);
    expect(poolPodName('warm', (n) => Buffer.alloc(n, 0))).toBe('warm-aaaaaaaaaa');
  });
});

describe('templateSpec', () => {
  it('is the Agent transport on an emptyDir of the template size, whatever the session asked', () => {
    expect(
      templateSpec(pool({ workspace: { sizeLimit: '2Gi' } }), { idleTimeoutSeconds: 60, image: 'mine' }),
    ).toEqual({
      idleTimeoutSeconds: 60,
      imagePullPolicy: 'IfNotPresent',
      workspace: { sizeLimit: '2Gi' },
      execTransport: 'Agent',
    });
  });
});

describe('warm Pods: requests without limits, and the default RuntimeClass', () => {
  it('a template naming only requests gets limits no lower than them (a quota requiring limits admits it)', () => {
    const pod = buildPoolPod(
      pool({ resources: { requests: { cpu: '2', memory: '128Mi' } } }),
      'warm-x',
      'h',
      opts,
    );
    expect(pod.spec!.containers[0]!.resources).toEqual({
      requests: { cpu: '2', memory: '128Mi' },
      limits: { cpu: '2', memory: '1Gi' },
    });
  });

  it('follows the operator default when the template names no runtime; the template wins otherwise', () => {
    const gvisor = { ...opts, podOptions: { ...podOptions, defaultRuntimeClassName: 'gvisor' } };
    expect(buildPoolPod(pool(), 'warm-x', 'h', gvisor).spec!.runtimeClassName).toBe('gvisor');
    expect(
      buildPoolPod(pool({ runtimeClassName: 'kata' }), 'warm-x', 'h', gvisor).spec!.runtimeClassName,
    ).toBe('kata');
    expect(buildPoolPod(pool(), 'warm-x', 'h', opts).spec!.runtimeClassName).toBeUndefined();
  });
});

describe('TemplateHashes', () => {
  it('recomputes when the default RuntimeClass starts or stops applying, or the generation changes', () => {
    let runtime: string | undefined = 'gvisor';
    const live = {
      ...opts,
      podOptions: Object.defineProperty({ ...podOptions }, 'defaultRuntimeClassName', {
        get: () => runtime,
        enumerable: true,
      }),
    };
    const hashes = new TemplateHashes();
    const p = pool();
    const withGvisor = hashes.of(p, live);
    expect(withGvisor).toBe(
      templateHash(p, { ...opts, podOptions: { ...podOptions, defaultRuntimeClassName: 'gvisor' } }),
    );
    runtime = undefined;
    const without = hashes.of(p, live);
    expect(without).not.toBe(withGvisor);
    expect(without).toBe(templateHash(p, opts));
    const next = {
      ...p,
      metadata: { ...p.metadata, generation: 2 },
      spec: { ...p.spec, template: { image: 'b' } },
    };
    expect(hashes.of(next, live)).toBe(templateHash(next, opts));
    hashes.forget(next);
    expect(hashes.of(p, live)).toBe(without);
  });
});
