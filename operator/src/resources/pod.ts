/**
 * The sandbox Pod of a session. Pure: no I/O, table-tested.
 *
 * Security: the Pod passes the PodSecurity `restricted` profile (non-root UID, no privilege
 * escalation, all capabilities dropped, RuntimeDefault seccomp) and goes further: a read-only root
 * filesystem with writable volumes only at /workspace (an emptyDir, or the session's
 * PersistentVolumeClaim) and /tmp, no service account token, no
 * service-link env vars. The master key never enters it; only the session's own token does, as a
 * read-only file and as env SANDBOX_TOKEN.
 *
 * spec.env never steers the agent's own process: with the Agent transport each entry arrives as
 * `SANDBOX_ENV_<name>` (SESSION_ENV_PREFIX), which nothing interprets, and the agent exports it
 * under its own name in the user's bash only. Given as is, NODE_OPTIONS would load code into the
 * agent's node, LD_PRELOAD into every process of the container (the agent and its probes), and
 * BASH_ENV would run before the agent's shell set up its framing. KubernetesExec containers have no
 * agent: their main process is the keep-alive shell and commands run through `kubectl exec`,
 * which starts them with the container's env, so they get spec.env as it is.
 *
 * restartPolicy Always: when the agent (or the keep-alive shell) exits, the kubelet restarts the
 * container in the same Pod, so the Pod keeps its IP and the /workspace emptyDir (it lives as long
 * as the Pod). With Never, every crash would fail the Pod and lose the workspace; with OnFailure, an
 * agent exiting 0 would leave a Succeeded Pod that nothing restarts. A Pod that still ends in a
 * terminal phase (eviction, node loss) is deleted and created again by the reconcile.
 *
 * shareProcessNamespace: the Pod's pause process becomes PID 1 of the Pod and reaps orphaned
 * processes. Otherwise the container's entrypoint is PID 1: the agent image execs node, which
 * never waits for orphans it inherits (background jobs of user commands whose parent exited), so
 * they would stay zombies for the Pod's life. Allowed by PodSecurity `restricted`; the only other
 * process it makes visible in /proc is pause itself.
 */
import type {
  V1Container,
  V1EnvVar,
  V1Pod,
  V1Probe,
  V1ResourceRequirements,
  V1Volume,
} from '@kubernetes/client-node';
import {
  AGENT_PATHS,
  AGENT_PORT,
  LABELS,
  SANDBOX_COMPONENT,
  SANDBOX_CONTAINER,
  SESSION_ENV_PREFIX,
  STARTUP_COMMAND_ENV,
  TOKEN_ENV,
  TOKEN_MOUNT_DIR,
  TOKEN_SECRET_KEY,
  WORKSPACE_DIR,
  podName,
  secretName,
  workspaceClaimName,
  type SandboxSession,
  type SandboxSessionSpec,
} from '@sandbox-platform/api';

import { egressCaMount, egressCaVolume, egressDns, egressEnv } from './egress.js';
import { childMetadata, type SessionRef } from './metadata.js';
import type { DefaultedResource, PodBuildOptions } from './pod-options.js';
import { pickQuantity } from './quantity.js';
import { workspaceSize } from './workspace-claim.js';

/** Keeps a container without the agent alive, and exits at once on SIGTERM (KubernetesExec). */
export const KEEPALIVE_COMMAND = [
  '/bin/sh',
  '-c',
  "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done",
];

/** Name of the agent's container port, which the probes address. */
const AGENT_PORT_NAME = 'agent';

/**
 * Readiness probe of an agent container: the kubelet's own GET /healthz on the agent port (true
 * once bash answers). An HTTP probe costs the node one request; the exec probe it replaces
 * (`sandbox-agent probe`, still in the image) started a Node process in the container every 2 s,
 * through runsc under gVisor, which dominated a busy node. NetworkPolicies never block it: traffic
 * from the Pod's own node is always allowed (NetworkPolicy semantics; kube-router does so).
 */
export const AGENT_READINESS_PROBE: V1Probe = {
  httpGet: { path: AGENT_PATHS.healthz, port: AGENT_PORT_NAME },
  periodSeconds: 2,
  timeoutSeconds: 2,
  failureThreshold: 3,
  successThreshold: 1,
};

/**
 * Liveness probe of an agent container: GET /livez. It fails only when the agent is wedged (a
 * command queue stalled beyond the longest allowed command plus its recovery, a starved I/O
 * threadpool, an event loop that does not answer), so the kubelet restarts it; /healthz stays the
 * readiness signal (false while bash restarts, which needs no restart). Three failures 10 s apart
 * restart a wedged agent; the first check waits 10 s so a slow start (a busy node, gVisor) is not
 * taken for a wedge.
 */
export const AGENT_LIVENESS_PROBE: V1Probe = {
  httpGet: { path: AGENT_PATHS.livez, port: AGENT_PORT_NAME },
  initialDelaySeconds: 10,
  periodSeconds: 10,
  timeoutSeconds: 5,
  failureThreshold: 3,
  successThreshold: 1,
};

const VOLUMES = { workspace: 'workspace', tmp: 'tmp', token: 'token' } as const;
const DEFAULTED: readonly DefaultedResource[] = ['cpu', 'memory'];

/** Builds the Pod of a session (spec defaults already applied by the API server where the CRD has them). */
export function buildPod(session: SandboxSession, ref: SessionRef, opts: PodBuildOptions): V1Pod {
  const spec = session.spec;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: childMetadata(ref, podName(ref.name), { [LABELS.component]: SANDBOX_COMPONENT }),
    spec: {
      restartPolicy: 'Always',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      shareProcessNamespace: true,
      terminationGracePeriodSeconds: opts.terminationGracePeriodSeconds,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: opts.runAsUser,
        runAsGroup: opts.runAsUser,
        fsGroup: opts.runAsUser,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      runtimeClassName: spec.runtimeClassName ?? opts.defaultRuntimeClassName,
      ...(opts.egressDnsServer === undefined ? {} : egressDns(opts.egressDnsServer)),
      nodeSelector: definedEntries(spec.nodeSelector),
      tolerations: spec.tolerations,
      containers: [sandboxContainer(spec, ref, opts)],
      volumes: volumes(session, ref, opts),
    },
  };
}

function sandboxContainer(spec: SandboxSessionSpec, ref: SessionRef, opts: PodBuildOptions): V1Container {
  const agent = (spec.execTransport ?? 'Agent') === 'Agent';
  return {
    name: SANDBOX_CONTAINER,
    image: spec.image ?? opts.defaultImage,
    imagePullPolicy: spec.imagePullPolicy ?? 'IfNotPresent',
    command: agent ? undefined : KEEPALIVE_COMMAND,
    workingDir: WORKSPACE_DIR,
    env: containerEnv(spec, ref, agent, opts.egressProxyUrl),
    ports: agent ? [{ name: AGENT_PORT_NAME, containerPort: AGENT_PORT, protocol: 'TCP' }] : undefined,
    readinessProbe: agent ? AGENT_READINESS_PROBE : undefined,
    livenessProbe: agent ? AGENT_LIVENESS_PROBE : undefined,
    resources: resources(spec, opts),
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    volumeMounts: [
      { name: VOLUMES.workspace, mountPath: WORKSPACE_DIR },
      { name: VOLUMES.tmp, mountPath: '/tmp' },
      { name: VOLUMES.token, mountPath: TOKEN_MOUNT_DIR, readOnly: true },
      ...(opts.egressProxyUrl === undefined ? [] : [egressCaMount()]),
    ],
  };
}

/**
 * HOME and the egress proxy's variables (resources/egress.ts) first so spec.env may override them;
 * the startup command and the token last. The CRD rejects
 * spec.env names starting with SANDBOX_, so nothing in the spec can shadow the token variable, the
 * startup command or a carrier name. For the Agent transport the entries carry SESSION_ENV_PREFIX
 * (see the module comment); the agent's bash then overrides HOME itself when spec.env names it.
 *
 * An entry that names a Secret (valueFrom.secretKeyRef, always of the session's own namespace: a
 * Pod's secretKeyRef has no namespace) stays a reference: the kubelet reads the value, which never
 * appears in the Pod spec (docs/adr/0016, "Env, Secrets and startup at bind time"). The
 * reconcile creates the Pod only once the references resolve (controller/env-sources.ts).
 */
function containerEnv(
  spec: SandboxSessionSpec,
  ref: SessionRef,
  agent: boolean,
  egressProxyUrl: string | undefined,
): V1EnvVar[] {
  const prefix = agent ? SESSION_ENV_PREFIX : '';
  const user = (spec.env ?? []).map((e): V1EnvVar => {
    const secret = e.valueFrom?.secretKeyRef;
    return secret
      ? { name: prefix + e.name, valueFrom: { secretKeyRef: { name: secret.name, key: secret.key } } }
      : { name: prefix + e.name, value: e.value ?? '' };
  });
  const startup = agent && spec.startup ? [{ name: STARTUP_COMMAND_ENV, value: spec.startup.command }] : [];
  return [
    { name: 'HOME', value: WORKSPACE_DIR },
    ...(egressProxyUrl === undefined ? [] : egressEnv(egressProxyUrl, agent)),
    ...user,
    ...startup,
    { name: TOKEN_ENV, valueFrom: { secretKeyRef: { name: secretName(ref.name), key: TOKEN_SECRET_KEY } } },
  ];
}

/**
 * Requests and limits of the sandbox container, per defaulted resource (cpu, memory):
 *
 * - the spec names neither: both defaults;
 * - the spec names both: the spec's (the API server refuses request > limit, with its message);
 * - a request only: the limit is the larger of the default limit and the request;
 * - a limit only: the request is the smaller of the default request and the limit.
 *
 * So a namespace whose ResourceQuota requires limits (or requests) admits a session that names
 * only one side (issue 25: its Pod was refused "must specify limits.cpu" and the session stayed
 * QuotaExceeded), and a filled-in side never makes request > limit: quantities are compared
 * exactly (quantity.ts). A value that does not parse (the CRD's pattern makes that unlikely) gets
 * no partner; the API server's validation then decides, with its own message.
 */
export function resources(spec: SandboxSessionSpec, opts: PodBuildOptions): V1ResourceRequirements {
  const requests: Record<string, string> = stringValues(spec.resources?.requests);
  const limits: Record<string, string> = stringValues(spec.resources?.limits);
  for (const name of DEFAULTED) {
    const request = requests[name];
    const limit = limits[name];
    const defaults = {
      request: opts.defaultResources.requests[name],
      limit: opts.defaultResources.limits[name],
    };
    if (request === undefined && limit === undefined) {
      requests[name] = defaults.request;
      limits[name] = defaults.limit;
    } else if (limit === undefined && request !== undefined) {
      const filled = pickQuantity('max', defaults.limit, request);
      if (filled !== undefined) limits[name] = filled;
    } else if (request === undefined && limit !== undefined) {
      const filled = pickQuantity('min', defaults.request, limit);
      if (filled !== undefined) requests[name] = filled;
    }
  }
  return { requests, limits };
}

/**
 * The workspace is the session's PersistentVolumeClaim when it has one (it outlives the Pod:
 * suspension, eviction, deletion), else an emptyDir that lives as long as the Pod.
 */
function volumes(session: SandboxSession, ref: SessionRef, opts: PodBuildOptions): V1Volume[] {
  const persistent = session.spec.workspace?.persistentVolumeClaim !== undefined;
  return [
    persistent
      ? { name: VOLUMES.workspace, persistentVolumeClaim: { claimName: workspaceClaimName(ref.name) } }
      : { name: VOLUMES.workspace, emptyDir: { sizeLimit: workspaceSize(session, opts) } },
    { name: VOLUMES.tmp, emptyDir: { sizeLimit: opts.tmpSize } },
    {
      name: VOLUMES.token,
      secret: {
        secretName: secretName(ref.name),
        // Group-readable only: files are root-owned with group fsGroup (= the sandbox UID's group).
        defaultMode: 0o440,
        items: [{ key: TOKEN_SECRET_KEY, path: TOKEN_SECRET_KEY }],
      },
    },
    ...(opts.egressProxyUrl === undefined ? [] : [egressCaVolume()]),
  ];
}

function stringValues(map: Record<string, number | string | undefined> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map ?? {})) if (v !== undefined) out[k] = String(v);
  return out;
}

function definedEntries(
  map: Record<string, string | undefined> | undefined,
): Record<string, string> | undefined {
  if (!map) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map)) if (v !== undefined) out[k] = v;
  return out;
}
