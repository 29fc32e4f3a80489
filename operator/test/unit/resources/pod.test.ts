import { describe, expect, it } from '@jest/globals';
import type { V1Container, V1Pod } from '@kubernetes/client-node';

import {
  AGENT_LIVENESS_PROBE,
  AGENT_READINESS_PROBE,
  KEEPALIVE_COMMAND,
  buildPod,
  resources,
} from '../../../src/resources/pod.js';
import { sessionRef } from '../../../src/resources/metadata.js';
import type { PodBuildOptions } from '../../../src/resources/pod-options.js';
import { compareQuantities, parseQuantity } from '../../../src/resources/quantity.js';
import { session, withSpec } from '../../fixtures/sessions.js';

const opts: PodBuildOptions = {
  defaultImage: 'img/default:1',
  defaultResources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
  defaultWorkspaceSize: '2Gi',
  tmpSize: '64Mi',
  runAsUser: 1000,
  terminationGracePeriodSeconds: 10,
};

function build(...mods: Parameters<typeof session>): V1Pod {
  const s = session(...mods);
  return buildPod(s, sessionRef(s), opts);
}

function buildWith(options: PodBuildOptions, ...mods: Parameters<typeof session>): V1Pod {
  const s = session(...mods);
  return buildPod(s, sessionRef(s), options);
}

/** Env entries that steer processes: they must never reach an agent container under their names. */
const STEERING = [
  { name: 'NODE_OPTIONS', value: '--require /nonexistent' },
  { name: 'LD_PRELOAD', value: '/nonexistent.so' },
  { name: 'BASH_ENV', value: '/workspace/evil.sh' },
  { name: 'NODE_PATH', value: '/workspace/mods' },
];

function container(pod: V1Pod): V1Container {
  const c = pod.spec?.containers[0];
  if (!c) throw new Error('no container');
  return c;
}

/** The PodSecurity "restricted" profile (v1.3x), as far as a Pod spec can show it. */
function restrictedViolations(pod: V1Pod): string[] {
  const problems: string[] = [];
  const podSc = pod.spec?.securityContext ?? {};
  for (const c of pod.spec?.containers ?? []) {
    const sc = c.securityContext ?? {};
    if (sc.allowPrivilegeEscalation !== false) problems.push('allowPrivilegeEscalation');
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push('drop ALL');
    if ((sc.capabilities?.add ?? []).some((cap) => cap !== 'NET_BIND_SERVICE'))
      problems.push('capabilities add');
    if (!(sc.runAsNonRoot ?? podSc.runAsNonRoot)) problems.push('runAsNonRoot');
    if ((sc.runAsUser ?? podSc.runAsUser) === 0) problems.push('runAsUser 0');
    const seccomp = sc.seccompProfile?.type ?? podSc.seccompProfile?.type;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') problems.push('seccomp');
    if (sc.privileged) problems.push('privileged');
  }
  if (pod.spec?.hostNetwork || pod.spec?.hostPID || pod.spec?.hostIPC) problems.push('host namespaces');
  for (const v of pod.spec?.volumes ?? []) {
    if (!v.emptyDir && !v.secret && !v.configMap && !v.projected) problems.push(`volume type of ${v.name}`);
  }
  return problems;
}

describe('buildPod', () => {
  it('names, labels and owns the Pod', () => {
    const pod = build();
    expect(pod.metadata?.name).toBe('sbs-demo');
    expect(pod.metadata?.namespace).toBe('team-a');
    expect(pod.metadata?.labels).toEqual({
      'app.kubernetes.io/managed-by': 'sandbox-operator',
      'sandbox.dev/session': 'demo',
      'app.kubernetes.io/component': 'sandbox',
    });
    expect(pod.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'sandbox.dev/v1alpha1',
        kind: 'SandboxSession',
        name: 'demo',
        uid: 'uid-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it('passes the PodSecurity restricted profile and hardens beyond it', () => {
    const pod = build();
    expect(restrictedViolations(pod)).toEqual([]);
    expect(pod.spec?.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      fsGroup: 1000,
    });
    expect(container(pod).securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    expect(pod.spec?.enableServiceLinks).toBe(false);
    expect(pod.spec?.restartPolicy).toBe('Always');
    // pause is PID 1 and reaps orphans (the agent's node process would leave them as zombies).
    expect(pod.spec?.shareProcessNamespace).toBe(true);
    expect(pod.spec?.terminationGracePeriodSeconds).toBe(10);
  });

  it('mounts the token read-only, gives it as env from the Secret, and writable emptyDirs at /workspace and /tmp', () => {
    const pod = build();
    const c = container(pod);
    expect(c.volumeMounts).toEqual([
      { name: 'workspace', mountPath: '/workspace' },
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'token', mountPath: '/var/run/sandbox', readOnly: true },
    ]);
    expect(pod.spec?.volumes).toEqual([
      { name: 'workspace', emptyDir: { sizeLimit: '1Gi' } },
      { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
      {
        name: 'token',
        secret: {
          secretName: 'sbs-demo-token',
          defaultMode: 0o440,
          items: [{ key: 'token', path: 'token' }],
        },
      },
    ]);
    expect(c.env?.at(-1)).toEqual({
      name: 'SANDBOX_TOKEN',
      valueFrom: { secretKeyRef: { name: 'sbs-demo-token', key: 'token' } },
    });
    expect(c.env?.[0]).toEqual({ name: 'HOME', value: '/workspace' });
    expect(c.workingDir).toBe('/workspace');
    expect(JSON.stringify(pod)).not.toMatch(/master/i);
  });

  it('Agent transport: spec env arrives as SANDBOX_ENV_<name> between HOME and the token, never under its own name', () => {
    const c = container(
      build(
        withSpec({
          env: [{ name: 'HOME', value: '/tmp' }, { name: 'A', value: '1' }, { name: 'B' }, ...STEERING],
        }),
      ),
    );
    expect(c.env?.map((e) => e.name)).toEqual([
      'HOME',
      'SANDBOX_ENV_HOME',
      'SANDBOX_ENV_A',
      'SANDBOX_ENV_B',
      'SANDBOX_ENV_NODE_OPTIONS',
      'SANDBOX_ENV_LD_PRELOAD',
      'SANDBOX_ENV_BASH_ENV',
      'SANDBOX_ENV_NODE_PATH',
      'SANDBOX_TOKEN',
    ]);
    expect(c.env?.[0]).toEqual({ name: 'HOME', value: '/workspace' });
    expect(c.env?.[3]).toEqual({ name: 'SANDBOX_ENV_B', value: '' });
    expect(c.env?.[4]).toEqual({ name: 'SANDBOX_ENV_NODE_OPTIONS', value: '--require /nonexistent' });
    for (const { name } of STEERING) expect(c.env?.some((e) => e.name === name)).toBe(false);
  });

  it('KubernetesExec transport (no agent): spec env as it is, between HOME and the token', () => {
    const c = container(
      build(
        withSpec({
          execTransport: 'KubernetesExec',
          env: [{ name: 'HOME', value: '/tmp' }, { name: 'A', value: '1' }, { name: 'B' }],
        }),
      ),
    );
    expect(c.env?.map((e) => e.name)).toEqual(['HOME', 'HOME', 'A', 'B', 'SANDBOX_TOKEN']);
    expect(c.env?.[3]).toEqual({ name: 'B', value: '' });
  });

  it('Agent transport: agent port and the HTTP readiness probe on it', () => {
    const c = container(build());
    expect(c.ports).toEqual([{ name: 'agent', containerPort: 8090, protocol: 'TCP' }]);
    expect(c.readinessProbe).toEqual(AGENT_READINESS_PROBE);
    expect(c.readinessProbe).toEqual({
      httpGet: { path: '/healthz', port: 'agent' },
      periodSeconds: 2,
      timeoutSeconds: 2,
      failureThreshold: 3,
      successThreshold: 1,
    });
    // No process in the container per probe (the exec probe started a Node process every 2 s).
    expect(c.readinessProbe?.exec).toBeUndefined();
    expect(c.command).toBeUndefined();
  });

  it('Agent transport: an HTTP liveness probe that restarts a wedged agent after three failures', () => {
    const c = container(build());
    expect(c.livenessProbe).toEqual(AGENT_LIVENESS_PROBE);
    expect(c.livenessProbe).toEqual({
      httpGet: { path: '/livez', port: 'agent' },
      initialDelaySeconds: 10,
      periodSeconds: 10,
      timeoutSeconds: 5,
      failureThreshold: 3,
      successThreshold: 1,
    });
    // Readiness is unchanged: fast, and separate from liveness.
    expect(c.readinessProbe).toMatchObject({ periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 3 });
  });

  it('KubernetesExec transport: a keep-alive shell, no port, no agent probes', () => {
    const c = container(build(withSpec({ execTransport: 'KubernetesExec' })));
    expect(c.command).toEqual(KEEPALIVE_COMMAND);
    expect(c.ports).toBeUndefined();
    expect(c.readinessProbe).toBeUndefined();
    expect(c.livenessProbe).toBeUndefined();
  });

  it('applies the default runtime class when the spec names none; the spec wins; none when neither', () => {
    const gvisor: PodBuildOptions = { ...opts, defaultRuntimeClassName: 'gvisor' };
    expect(buildWith(gvisor).spec?.runtimeClassName).toBe('gvisor');
    expect(buildWith(gvisor, withSpec({ runtimeClassName: 'kata' })).spec?.runtimeClassName).toBe('kata');
    expect(build().spec?.runtimeClassName).toBeUndefined();
  });

  it('takes image, pull policy, runtime class, node selector and tolerations from the spec', () => {
    const pod = build(
      withSpec({
        image: 'img/custom:2',
        imagePullPolicy: 'Never',
        runtimeClassName: 'gvisor',
        nodeSelector: { pool: 'sandbox' },
        tolerations: [{ key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' }],
        workspace: { sizeLimit: '5Gi' },
      }),
    );
    expect(container(pod).image).toBe('img/custom:2');
    expect(container(pod).imagePullPolicy).toBe('Never');
    expect(pod.spec?.runtimeClassName).toBe('gvisor');
    expect(pod.spec?.nodeSelector).toEqual({ pool: 'sandbox' });
    expect(pod.spec?.tolerations).toEqual([{ key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(pod.spec?.volumes?.[0]).toEqual({ name: 'workspace', emptyDir: { sizeLimit: '5Gi' } });
  });

  it('defaults the image, pull policy and workspace size when the spec has none', () => {
    const pod = build((s) => {
      s.spec = {};
    });
    expect(container(pod).image).toBe('img/default:1');
    expect(container(pod).imagePullPolicy).toBe('IfNotPresent');
    expect(pod.spec?.volumes?.[0]).toEqual({ name: 'workspace', emptyDir: { sizeLimit: '2Gi' } });
  });
});

describe('buildPod: the egress proxy (SANDBOX_EGRESS_PROXY_URL)', () => {
  const proxy = 'http://rel-egress-proxy.sandbox-system.svc:3128';
  const withProxy: PodBuildOptions = { ...opts, egressProxyUrl: proxy };
  const BUNDLE = '/tmp/.sandbox-egress/ca-bundle.pem';
  const CA = '/var/run/sandbox-egress/ca.crt';

  it('Agent transport: the proxy, loopback without it, and the trust bundle the agent keeps, before spec.env', () => {
    const c = container(buildWith(withProxy, withSpec({ env: [{ name: 'HTTPS_PROXY', value: 'x' }] })));
    const env = c.env ?? [];
    expect(env.map((e) => [e.name, e.value])).toEqual([
      ['HOME', '/workspace'],
      ['HTTP_PROXY', proxy],
      ['http_proxy', proxy],
      ['HTTPS_PROXY', proxy],
      ['https_proxy', proxy],
      ['NO_PROXY', 'localhost,127.0.0.1,::1'],
      ['no_proxy', 'localhost,127.0.0.1,::1'],
      ['SANDBOX_AGENT_EGRESS_CA', CA],
      ['SSL_CERT_FILE', BUNDLE],
      ['CURL_CA_BUNDLE', BUNDLE],
      ['REQUESTS_CA_BUNDLE', BUNDLE],
      ['GIT_SSL_CAINFO', BUNDLE],
      ['PIP_CERT', BUNDLE],
      ['NODE_EXTRA_CA_CERTS', BUNDLE],
      // spec.env comes after (the agent exports it over the container's in the user's bash).
      ['SANDBOX_ENV_HTTPS_PROXY', 'x'],
      ['SANDBOX_TOKEN', undefined],
    ]);
  });

  it("mounts the namespace's CA ConfigMap read-only and optional (the proxy may publish it after the Pod starts)", () => {
    const pod = buildWith(withProxy);
    expect(container(pod).volumeMounts?.at(-1)).toEqual({
      name: 'egress-ca',
      mountPath: '/var/run/sandbox-egress',
      readOnly: true,
    });
    expect(pod.spec?.volumes?.at(-1)).toEqual({
      name: 'egress-ca',
      configMap: {
        name: 'sandbox-egress-ca',
        optional: true,
        defaultMode: 0o444,
        items: [{ key: 'ca.crt', path: 'ca.crt' }],
      },
    });
  });

  it('KubernetesExec transport: the proxy and NODE_EXTRA_CA_CERTS, no bundle variables (no agent writes it)', () => {
    const c = container(buildWith(withProxy, withSpec({ execTransport: 'KubernetesExec' })));
    const names = (c.env ?? []).map((e) => e.name);
    expect(names).toContain('HTTPS_PROXY');
    expect(c.env?.find((e) => e.name === 'NODE_EXTRA_CA_CERTS')?.value).toBe(CA);
    expect(names).not.toContain('SSL_CERT_FILE');
    expect(names).not.toContain('SANDBOX_AGENT_EGRESS_CA');
  });

  it('without the proxy: no proxy variable, no CA volume, the cluster DNS', () => {
    const pod = build();
    expect(JSON.stringify(pod)).not.toMatch(/PROXY|egress|CA_CERTS|SSL_CERT/);
    expect(pod.spec?.dnsPolicy).toBeUndefined();
    expect(pod.spec?.dnsConfig).toBeUndefined();
  });

  it("with the proxy's DNS: dnsPolicy None, its address the only name server, no search path", () => {
    const pod = buildWith({ ...withProxy, egressDnsServer: '10.96.0.53' });
    expect(pod.spec?.dnsPolicy).toBe('None');
    expect(pod.spec?.dnsConfig).toEqual({
      nameservers: ['10.96.0.53'],
      options: [{ name: 'ndots', value: '1' }],
    });
    // The proxy without its DNS leaves the Pod on the cluster DNS.
    expect(buildWith(withProxy).spec?.dnsPolicy).toBeUndefined();
  });
});

describe('buildPod: persistent workspace', () => {
  it('mounts the session claim at /workspace instead of an emptyDir, /tmp stays an emptyDir', () => {
    const pod = build(withSpec({ workspace: { sizeLimit: '5Gi', persistentVolumeClaim: {} } }));
    expect(pod.spec?.volumes?.slice(0, 2)).toEqual([
      { name: 'workspace', persistentVolumeClaim: { claimName: 'sbs-demo-workspace' } },
      { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
    ]);
    expect(pod.spec?.containers[0]?.volumeMounts?.[0]).toEqual({
      name: 'workspace',
      mountPath: '/workspace',
    });
    expect(pod.spec?.containers[0]?.env?.[0]).toEqual({ name: 'HOME', value: '/workspace' });
  });
});

describe('resources', () => {
  it.each([
    ['no resources: both defaults', undefined, { cpu: '100m', memory: '256Mi' }, { cpu: '1', memory: '1Gi' }],
    [
      'cpu request above the default limit only: the limit is the request',
      { requests: { cpu: '2' } },
      { cpu: '2', memory: '256Mi' },
      { cpu: '2', memory: '1Gi' },
    ],
    [
      'cpu request below the default limit only: the default limit',
      { requests: { cpu: '250m' } },
      { cpu: '250m', memory: '256Mi' },
      { cpu: '1', memory: '1Gi' },
    ],
    [
      'memory request only, equal to the default limit in other units: the default limit',
      { requests: { memory: '1073741824' } },
      { cpu: '100m', memory: '1073741824' },
      { cpu: '1', memory: '1Gi' },
    ],
    [
      'memory request only, 2G (decimal) above 1Gi: the limit is the request',
      { requests: { memory: '2G' } },
      { cpu: '100m', memory: '2G' },
      { cpu: '1', memory: '2G' },
    ],
    [
      'memory limit only, above the default request: the default request',
      { limits: { memory: '4Gi' } },
      { cpu: '100m', memory: '256Mi' },
      { cpu: '1', memory: '4Gi' },
    ],
    [
      'cpu limit only, below the default request: the request is the limit',
      { limits: { cpu: '50m' } },
      { cpu: '50m', memory: '256Mi' },
      { cpu: '50m', memory: '1Gi' },
    ],
    [
      'a cpu request as a number (1.5 cores) against the default limit 1: the limit is the request',
      { requests: { cpu: 1.5 } },
      { cpu: '1.5', memory: '256Mi' },
      { cpu: '1.5', memory: '1Gi' },
    ],
    [
      'both named: the spec values, even request > limit (the API server refuses that, with its message)',
      { requests: { cpu: '2' }, limits: { cpu: '1' } },
      { cpu: '2', memory: '256Mi' },
      { cpu: '1', memory: '1Gi' },
    ],
    [
      'numbers become strings',
      { requests: { cpu: 2 }, limits: { cpu: 3 } },
      { cpu: '2', memory: '256Mi' },
      { cpu: '3', memory: '1Gi' },
    ],
    [
      'other resources pass through',
      { limits: { 'ephemeral-storage': '1Gi' } },
      { cpu: '100m', memory: '256Mi' },
      { cpu: '1', memory: '1Gi', 'ephemeral-storage': '1Gi' },
    ],
  ])('%s', (_name, specResources, requests, limits) => {
    expect(resources({ resources: specResources }, opts)).toEqual({ requests, limits });
  });

  it('never fills in a side that makes request > limit, whatever one side the spec names', () => {
    const values = [
      '1m',
      '50m',
      '100m',
      '0.1',
      '999m',
      '1',
      '1.0',
      '2',
      '1e3',
      '128Mi',
      '256Mi',
      '1Gi',
      '1G',
      '4Gi',
    ];
    for (const name of ['cpu', 'memory'] as const) {
      for (const v of values) {
        for (const side of ['requests', 'limits'] as const) {
          const r = resources({ resources: { [side]: { [name]: v } } }, opts);
          const request = parseQuantity(r.requests?.[name] ?? '');
          const limit = parseQuantity(r.limits?.[name] ?? '');
          expect([name, side, v, request && limit && compareQuantities(request, limit) <= 0]).toEqual([
            name,
            side,
            v,
            true,
          ]);
        }
      }
    }
  });
});
