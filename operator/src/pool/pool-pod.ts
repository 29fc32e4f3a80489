/**
 * The warm Pods of a pool. Pure: no I/O, table-tested.
 *
 * A warm Pod is the Pod buildPod makes for a session with the pool's template as its spec (the
 * same security context, probes, resources and volumes as a cold session's), with four changes:
 *
 * - named `<pool>-<10 random characters>`, owned by the pool (controller ownerReference), labelled
 *   with the pool's name (kept after binding) and the sandbox component (so the sandbox
 *   NetworkPolicies select it), annotated with the template hash;
 * - no token: no token Secret volume and no SANDBOX_TOKEN. A warm Pod holds nothing secret;
 * - the agent's bind settings instead: the operator's bind verification key (public) and the
 *   Pod's own identity from the downward API, which a bind must name (docs/adr/0016);
 * - a small in-memory emptyDir where the token Secret would be mounted, where the agent keeps the
 *   accepted bind so that a restarted agent container stays bound.
 */
import { createHash, randomBytes } from 'node:crypto';

import type { V1EnvVar, V1Pod, V1Volume } from '@kubernetes/client-node';
import {
  API_VERSION,
  BIND_ENV,
  LABELS,
  MANAGER_NAME,
  POOL_ANNOTATIONS,
  POOL_KIND,
  POOL_LABELS,
  POOL_POD_SUFFIX_LENGTH,
  SANDBOX_COMPONENT,
  TOKEN_ENV,
  TOKEN_MOUNT_DIR,
  type SandboxSession,
  type SandboxSessionSpec,
} from '@sandbox-platform/api';

import type { PodBuildOptions } from '../resources/pod-options.js';
import { buildPod } from '../resources/pod.js';
import type { PoolView } from './pool-view.js';

/** Everything a warm Pod needs beyond its pool. */
export interface PoolPodOptions {
  readonly podOptions: PodBuildOptions;
  /** The operator's bind verification key (public), 64 hex characters. */
  readonly bindKeyHex: string;
}

/**
 * Size of the emptyDir that holds the agent's bind state: one JSON file, the bind request, at most
 * MAX_BIND_BODY_BYTES (2 MiB) with the session's env and startup command in it, and its temporary
 * copy while it is renamed into place.
 */
const BIND_STATE_SIZE = '5Mi';
/** Name of the token volume in buildPod's Pod, replaced here by the bind state emptyDir. */
const TOKEN_VOLUME = 'token';

/**
 * The template as a session spec: the Pod-shaping fields of the pool, the Agent transport, an
 * emptyDir workspace of the template's size. A pooled session created cold gets this spec too,
 * with its own env after the template's (a name in both: the session's, as a warm Pod's shell
 * ends up with once the bind's env is exported) and its own startup command.
 */
export function templateSpec(
  pool: PoolView,
  lifecycle: Partial<SandboxSessionSpec> = {},
): SandboxSessionSpec {
  const t = pool.spec.template ?? {};
  const spec: SandboxSessionSpec = {
    ...lifecycle,
    image: t.image,
    imagePullPolicy: t.imagePullPolicy ?? 'IfNotPresent',
    env: mergedEnv(t.env, lifecycle.env),
    resources: t.resources,
    runtimeClassName: t.runtimeClassName,
    nodeSelector: t.nodeSelector,
    tolerations: t.tolerations,
    workspace: { sizeLimit: t.workspace?.sizeLimit },
    execTransport: 'Agent',
  };
  return Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== undefined));
}

/** The template's env, then the session's; a name the session gives again takes the session's entry. */
function mergedEnv(
  template: SandboxSessionSpec['env'],
  session: SandboxSessionSpec['env'],
): SandboxSessionSpec['env'] {
  if (!session?.length) return template;
  const own = new Set(session.map((e) => e.name));
  return [...(template ?? []).filter((e) => !own.has(e.name)), ...session];
}

/** A fresh warm Pod name: `<pool>-<10 base-36 characters>` (about 51 bits; a Pod name is a hostname). */
export function poolPodName(pool: string, random: (n: number) => Buffer = randomBytes): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const suffix = [...random(POOL_POD_SUFFIX_LENGTH)].map((b) => alphabet[b % 36]).join('');
  return `${pool}-${suffix}`;
}

/**
 * The hash of the Pod the pool's template makes now (its spec: template, operator defaults, bind
 * key). A warm Pod annotated with another hash is outdated.
 */
export function templateHash(pool: PoolView, opts: PoolPodOptions): string {
  const spec = podSpec(pool, opts);
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 16);
}

/**
 * Template hashes, computed once per pool generation and default RuntimeClass: the default applies
 * only while it exists (kube/runtime-class.ts), so when that changes the warm Pods of a template
 * naming no runtime are outdated and replaced.
 */
export class TemplateHashes {
  private readonly hashes = new Map<string, { generation: number; runtime?: string; hash: string }>();

  /** The pool's current template hash. */
  of(pool: PoolView, opts: PoolPodOptions): string {
    const key = hashKey(pool);
    const runtime = opts.podOptions.defaultRuntimeClassName;
    const cached = this.hashes.get(key);
    if (cached?.generation === pool.metadata.generation && cached.runtime === runtime) return cached.hash;
    const hash = templateHash(pool, opts);
    this.hashes.set(key, { generation: pool.metadata.generation, runtime, hash });
    return hash;
  }

  /** Drops a deleted pool's entry. */
  forget(pool: PoolView): void {
    this.hashes.delete(hashKey(pool));
  }
}

function hashKey(pool: PoolView): string {
  return `${pool.metadata.namespace}/${pool.metadata.name}/${pool.metadata.uid}`;
}

/** Builds a warm Pod named `name` of the pool, annotated with the template hash. */
export function buildPoolPod(pool: PoolView, name: string, hash: string, opts: PoolPodOptions): V1Pod {
  const { namespace, name: poolName, uid } = pool.metadata;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: {
        [LABELS.managedBy]: MANAGER_NAME,
        [LABELS.component]: SANDBOX_COMPONENT,
        [POOL_LABELS.pool]: poolName,
      },
      annotations: { [POOL_ANNOTATIONS.templateHash]: hash },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: POOL_KIND,
          name: poolName,
          uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: podSpec(pool, opts),
  };
}

/** The spec of a warm Pod: buildPod's for the template, with the token replaced by the bind settings. */
function podSpec(pool: PoolView, opts: PoolPodOptions): NonNullable<V1Pod['spec']> {
  const { namespace, name, uid } = pool.metadata;
  const session: SandboxSession = { metadata: { namespace, name, uid }, spec: templateSpec(pool) };
  const spec = buildPod(session, { namespace, name, uid }, opts.podOptions).spec;
  if (!spec) throw new Error('buildPod returned a Pod without a spec');
  const [container, ...others] = spec.containers;
  if (!container || others.length > 0) throw new Error('buildPod returned other than one container');
  return {
    ...spec,
    containers: [
      {
        ...container,
        env: [...(container.env ?? []).filter((e) => e.name !== TOKEN_ENV), ...bindEnv(opts.bindKeyHex)],
        volumeMounts: (container.volumeMounts ?? []).map((m) =>
          m.name === TOKEN_VOLUME ? { name: TOKEN_VOLUME, mountPath: TOKEN_MOUNT_DIR } : m,
        ),
      },
    ],
    volumes: (spec.volumes ?? []).map((v) => (v.name === TOKEN_VOLUME ? bindStateVolume() : v)),
  };
}

function bindEnv(keyHex: string): V1EnvVar[] {
  const field = (fieldPath: string): V1EnvVar['valueFrom'] => ({ fieldRef: { fieldPath } });
  return [
    { name: BIND_ENV.key, value: keyHex },
    { name: BIND_ENV.podNamespace, valueFrom: field('metadata.namespace') },
    { name: BIND_ENV.podName, valueFrom: field('metadata.name') },
    { name: BIND_ENV.podUID, valueFrom: field('metadata.uid') },
  ];
}

function bindStateVolume(): V1Volume {
  return { name: TOKEN_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: BIND_STATE_SIZE } };
}
