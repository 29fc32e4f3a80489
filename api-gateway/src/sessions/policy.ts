/**
 * Session policy: the gateway's own bounds on what a caller may ask for (idle timeout and lifetime,
 * env size, exec transports), and the SandboxSession object the gateway creates from a request.
 * Pure functions; the JSON schema of the request (routes/sessions/schemas.ts) has already checked
 * types and shapes.
 *
 * What a sandbox may be (its image; and for kubectl users also its runtime class, node selector,
 * tolerations and size) is not decided here: the platform's admission policy decides it in the API
 * server for every creator alike (charts/sandbox-platform/templates/sandbox-policy.yaml, ADR 0028),
 * and the gateway answers its refusal of the create call as 403 policy-violation with the policy's
 * message (kube-errors.ts). One definition, so the gateway and kubectl cannot disagree.
 */
import type { SandboxSession, SandboxSessionSpec } from '@sandbox-platform/api';
import { API_VERSION, KIND } from '@sandbox-platform/api';

import type { SessionPolicy } from '../config.js';
import { ProblemError } from '../errors.js';
import type { TransportKind } from './model.js';

/** The spec overrides a caller may send (POST /v1/sessions and the create_session tool). */
export interface SessionOverrides {
  image?: string;
  env?: Record<string, string>;
  /**
   * Env values from Secrets of the session's namespace: name -> `{secret, key}`, written as
   * spec.env valueFrom.secretKeyRef (the operator reads them; a pooled session gets the values in
   * its signed bind, docs/adr/0016). The gateway never reads a Secret.
   */
  secretEnv?: Record<string, { secret: string; key: string }>;
  /** spec.startup.command: run as a background process at every start of the session. */
  startupCommand?: string;
  idleTimeoutSeconds?: number;
  maxLifetimeSeconds?: number;
  /** Suspend needs persistentWorkspace (the CRD's CEL rule refuses it otherwise: 422). */
  shutdownPolicy?: 'Delete' | 'Retain' | 'Suspend';
  execTransport?: TransportKind;
  /** /workspace on a PersistentVolumeClaim of the default StorageClass (ADR 0015). */
  persistentWorkspace?: boolean;
  /** spec.poolRef: bind a warm Pod of this SandboxPool (ADR 0016). */
  pool?: string;
}

/**
 * Overrides that shape the Pod: a pool's template decides them, so they cannot come with a pool.
 * env, secretEnv and startupCommand do not: a warm Pod gets them in its bind (docs/adr/0016).
 */
const POD_SHAPING = ['image', 'execTransport', 'persistentWorkspace'] as const;

/** Most variables of env and secretEnv together (spec.env's maxItems). */
const MAX_ENV_ENTRIES = 64;

/** Total bytes of env names and values, UTF-8 (what the CRD's CEL rule counts). */
export function envBytes(env: Record<string, string>): number {
  let n = 0;
  for (const [k, v] of Object.entries(env)) n += Buffer.byteLength(k) + Buffer.byteLength(v);
  return n;
}

/**
 * Combinations the CRD refuses (its CEL rules would answer 422 from the API server): refused here
 * first with a message in the gateway's terms (400 invalid-request).
 */
function checkShape(o: SessionOverrides): void {
  if (o.pool !== undefined) {
    const shaping = POD_SHAPING.filter((k) => o[k] !== undefined && o[k] !== false);
    if (shaping.length > 0) {
      throw new ProblemError(
        'invalid-request',
        `pool ${o.pool} decides the sandbox: ${shaping.join(', ')} cannot be given with it`,
      );
    }
  }
  const entries = Object.keys(o.env ?? {}).length + Object.keys(o.secretEnv ?? {}).length;
  if (entries > MAX_ENV_ENTRIES) {
    throw new ProblemError(
      'invalid-request',
      `env and secretEnv hold ${entries} variables; at most ${MAX_ENV_ENTRIES}`,
    );
  }
  const twice = Object.keys(o.secretEnv ?? {}).filter((k) => o.env?.[k] !== undefined);
  if (twice.length > 0) {
    throw new ProblemError('invalid-request', `env and secretEnv both name ${twice.join(', ')}`);
  }
  if (o.startupCommand !== undefined && o.execTransport === 'KubernetesExec') {
    throw new ProblemError('invalid-request', 'startupCommand needs the Agent transport (the agent runs it)');
  }
  if (o.shutdownPolicy === 'Suspend' && o.persistentWorkspace !== true) {
    throw new ProblemError(
      'invalid-request',
      'shutdownPolicy Suspend needs persistentWorkspace: true (an emptyDir workspace would be lost at every idle suspension)',
    );
  }
}

/**
 * Throws policy-violation (422) naming the first override the gateway's own bounds refuse. The image
 * is left to the admission policy (see the module comment).
 */
export function checkPolicy(o: SessionOverrides, policy: SessionPolicy): void {
  checkShape(o);
  if (o.env !== undefined && envBytes(o.env) > policy.maxEnvBytes) {
    throw new ProblemError(
      'policy-violation',
      `env holds ${envBytes(o.env)} bytes of names and values; the limit is ${policy.maxEnvBytes} (pass larger data as a file)`,
    );
  }
  if (o.idleTimeoutSeconds !== undefined) {
    if (o.idleTimeoutSeconds === 0) {
      throw new ProblemError('policy-violation', 'idleTimeoutSeconds 0 (never collected) is not allowed');
    }
    if (o.idleTimeoutSeconds > policy.maxIdleTimeoutSeconds) {
      throw new ProblemError(
        'policy-violation',
        `idleTimeoutSeconds exceeds the maximum of ${policy.maxIdleTimeoutSeconds}`,
      );
    }
  }
  if (o.maxLifetimeSeconds !== undefined && o.maxLifetimeSeconds > policy.maxLifetimeSeconds) {
    throw new ProblemError(
      'policy-violation',
      `maxLifetimeSeconds exceeds the maximum of ${policy.maxLifetimeSeconds}`,
    );
  }
  if (o.execTransport !== undefined && !policy.allowedExecTransports.includes(o.execTransport)) {
    throw new ProblemError(
      'policy-violation',
      `execTransport ${o.execTransport} is not allowed by this gateway`,
    );
  }
}

/** The spec the gateway writes: the caller's overrides plus the policy's defaults for bounded fields. */
export function buildSpec(o: SessionOverrides, policy: SessionPolicy): SandboxSessionSpec {
  const spec: SandboxSessionSpec = {
    idleTimeoutSeconds: o.idleTimeoutSeconds ?? policy.defaultIdleTimeoutSeconds,
    maxLifetimeSeconds: o.maxLifetimeSeconds ?? policy.maxLifetimeSeconds,
  };
  if (o.image !== undefined) spec.image = o.image;
  Object.assign(spec, specEnv(o));
  if (o.shutdownPolicy !== undefined) spec.shutdownPolicy = o.shutdownPolicy;
  if (o.execTransport !== undefined) spec.execTransport = o.execTransport;
  if (o.persistentWorkspace === true) spec.workspace = { persistentVolumeClaim: {} };
  if (o.pool !== undefined) spec.poolRef = { name: o.pool };
  return spec;
}

/** spec.env (plain values, then Secret references) and spec.startup, as far as the caller gave them. */
function specEnv(o: SessionOverrides): Pick<SandboxSessionSpec, 'env' | 'startup'> {
  const out: Pick<SandboxSessionSpec, 'env' | 'startup'> = {};
  if (o.env !== undefined || o.secretEnv !== undefined) {
    out.env = [
      ...Object.entries(o.env ?? {}).map(([name, value]) => ({ name, value })),
      ...Object.entries(o.secretEnv ?? {}).map(([name, ref]) => ({
        name,
        valueFrom: { secretKeyRef: { name: ref.secret, key: ref.key } },
      })),
    ];
  }
  if (o.startupCommand !== undefined) out.startup = { command: o.startupCommand };
  return out;
}

/** The SandboxSession object to create. */
export function buildSession(namespace: string, name: string, spec: SandboxSessionSpec): SandboxSession {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace }, spec };
}

/**
 * Fields the caller explicitly asked for that differ in an existing session of the same name.
 * Create-or-get returns the existing session when this is empty (retries and racing replicas send
 * the same request) and answers 409 otherwise, rather than silently ignoring the request.
 */
export function conflictingFields(o: SessionOverrides, existing: SandboxSessionSpec): string[] {
  // Existing values as the CRD defaults them, so an explicit default does not count as different.
  const have: Record<string, unknown> = {
    image: existing.image,
    idleTimeoutSeconds: existing.idleTimeoutSeconds,
    maxLifetimeSeconds: existing.maxLifetimeSeconds,
    shutdownPolicy: existing.shutdownPolicy ?? 'Delete',
    execTransport: existing.execTransport ?? 'Agent',
  };
  const out = Object.keys(have).filter((k) => {
    const wanted = o[k as keyof SessionOverrides];
    return wanted !== undefined && wanted !== have[k];
  });
  out.push(...envConflicts(o, existing));
  const persistent = existing.workspace?.persistentVolumeClaim !== undefined;
  if (o.persistentWorkspace !== undefined && o.persistentWorkspace !== persistent) {
    out.push('persistentWorkspace');
  }
  if (o.pool !== undefined && o.pool !== existing.poolRef?.name) out.push('pool');
  return out;
}

type EnvEntries = NonNullable<SandboxSessionSpec['env']>;

/** Which of env, secretEnv and startupCommand the caller gave differently from the existing spec. */
function envConflicts(o: SessionOverrides, existing: SandboxSessionSpec): string[] {
  const out: string[] = [];
  if (o.env !== undefined && !sameEnv(o.env, plainEnv(existing.env))) out.push('env');
  if (o.secretEnv !== undefined && !sameSecretEnv(o.secretEnv, existing.env)) out.push('secretEnv');
  if (o.startupCommand !== undefined && o.startupCommand !== existing.startup?.command) {
    out.push('startupCommand');
  }
  return out;
}

function plainEnv(env: EnvEntries | undefined): EnvEntries {
  return (env ?? []).filter((e) => e.valueFrom === undefined);
}

function sameSecretEnv(
  wanted: NonNullable<SessionOverrides['secretEnv']>,
  env: EnvEntries | undefined,
): boolean {
  const have = (env ?? []).flatMap((e) => (e.valueFrom ? [[e.name, e.valueFrom.secretKeyRef] as const] : []));
  const byName = new Map(have);
  return (
    have.length === Object.keys(wanted).length &&
    Object.entries(wanted).every(([k, ref]) => {
      const got = byName.get(k);
      return got?.name === ref.secret && got.key === ref.key;
    })
  );
}

function sameEnv(wanted: Record<string, string>, have: EnvEntries): boolean {
  const entries = Object.entries(wanted);
  if (entries.length !== have.length) return false;
  const byName = new Map(have.map((e) => [e.name, e.value ?? '']));
  return entries.every(([k, v]) => byName.get(k) === v);
}
