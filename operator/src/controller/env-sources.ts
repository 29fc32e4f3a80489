/**
 * The values of a session's env (docs/adr/0016, "Env, Secrets and startup at bind time"). spec.env
 * entries are plain values or name a key of a Secret of the session's own namespace (the CRD has
 * no namespace field; it refuses one). Before a session gets a Pod, the operator reads every
 * Secret its env names:
 *
 * - a warm Pod gets the values in its signed bind (the only place they travel: never the Pod
 *   spec, the CR, an Event or a log line);
 * - a Pod created for the session gets the references (the kubelet reads the values), and the
 *   read only proves they resolve, so that a missing Secret is a condition of the session
 *   (SecretNotFound), not a container stuck in CreateContainerConfigError.
 *
 * A Secret or key that does not exist, or values that cannot be exported (over
 * SECRET_ENV_MAX_TOTAL_BYTES together, not UTF-8, a NUL byte), stop the provisioning with a
 * stable reason whose message names the Secret and key, never a value; nothing is created or
 * claimed, and the session is looked at again after deps.waitRequeueMs (no watch on tenant
 * Secrets announces their arrival).
 */
import {
  REASONS,
  SECRET_ENV_MAX_TOTAL_BYTES,
  type SandboxSession,
  type SandboxSessionSpec,
} from '@sandbox-platform/api';

import type { TenantSecretReader } from '../kube/tenant-secrets.js';

/** One variable of the env a bind carries. */
export interface EnvValue {
  readonly name: string;
  readonly value: string;
}

/** Why the env cannot be resolved (a Ready reason and a message naming no value). */
export interface EnvProblem {
  readonly reason: typeof REASONS.secretNotFound | typeof REASONS.secretValueInvalid;
  readonly message: string;
}

/** The resolved env, in spec order, or the first problem. */
export type EnvResolution =
  | { readonly kind: 'ok'; readonly env: readonly EnvValue[] }
  | { readonly kind: 'problem'; readonly problem: EnvProblem };

type EnvEntry = NonNullable<SandboxSessionSpec['env']>[number];

/** True when an entry of spec.env names a Secret. */
export function hasSecretRefs(spec: SandboxSessionSpec): boolean {
  return (spec.env ?? []).some((e) => e.valueFrom?.secretKeyRef !== undefined);
}

/**
 * Reads the Secrets spec.env names (each once, concurrently) and returns the env with their
 * values. Throws only when a read fails (the reconcile retries with backoff).
 */
export async function resolveSessionEnv(
  session: SandboxSession,
  reader: TenantSecretReader,
): Promise<EnvResolution> {
  const namespace = session.metadata.namespace ?? '';
  const entries = session.spec.env ?? [];
  const names = [...new Set(entries.flatMap((e) => (e.valueFrom ? [e.valueFrom.secretKeyRef.name] : [])))];
  const secrets = new Map(
    await Promise.all(names.map(async (name) => [name, await reader.read(namespace, name)] as const)),
  );
  const env: EnvValue[] = [];
  let secretBytes = 0;
  for (const entry of entries) {
    const resolved = valueOf(entry, secrets);
    if ('problem' in resolved) return { kind: 'problem', problem: resolved.problem };
    if (entry.valueFrom) secretBytes += Buffer.byteLength(resolved.value);
    env.push({ name: entry.name, value: resolved.value });
  }
  if (secretBytes > SECRET_ENV_MAX_TOTAL_BYTES) {
    return problem(
      REASONS.secretValueInvalid,
      `The values spec.env reads from Secrets hold ${secretBytes} bytes together; at most ${SECRET_ENV_MAX_TOTAL_BYTES} are allowed`,
    );
  }
  return { kind: 'ok', env };
}

function valueOf(
  entry: EnvEntry,
  secrets: ReadonlyMap<string, Readonly<Record<string, Buffer>> | undefined>,
): { value: string } | { problem: EnvProblem } {
  const ref = entry.valueFrom?.secretKeyRef;
  if (!ref) return { value: entry.value ?? '' };
  const data = secrets.get(ref.name);
  const where = `env ${entry.name}: Secret ${ref.name}`;
  if (!data) return problem(REASONS.secretNotFound, `${where} does not exist in the session's namespace`);
  const bytes = data[ref.key];
  if (!bytes) return problem(REASONS.secretNotFound, `${where} has no key ${ref.key}`);
  const value = bytes.toString('utf8');
  if (!Buffer.from(value, 'utf8').equals(bytes) || value.includes('\0')) {
    return problem(
      REASONS.secretValueInvalid,
      `${where}, key ${ref.key}: the value is not UTF-8 text without NUL bytes, so no shell can hold it`,
    );
  }
  return { value };
}

function problem(reason: EnvProblem['reason'], message: string): { kind: 'problem'; problem: EnvProblem } {
  return { kind: 'problem', problem: { reason, message } };
}

/** What the scope keeps of the env (scope.ts). */
export interface EnvScope {
  session: SandboxSession;
  /** Resolved once per reconcile. */
  env?: EnvResolution;
  /** Set when the env cannot be resolved: the Ready verdict (status.ts). */
  envProblem?: EnvProblem;
}

/**
 * The session's env with Secret values, resolved once per reconcile; undefined (and
 * `scope.envProblem` set) when it cannot be: the caller halts the provisioning.
 */
export async function sessionEnvOf(
  scope: EnvScope,
  reader: TenantSecretReader,
): Promise<readonly EnvValue[] | undefined> {
  scope.env ??= await resolveSessionEnv(scope.session, reader);
  if (scope.env.kind === 'ok') return scope.env.env;
  scope.envProblem = scope.env.problem;
  return undefined;
}
