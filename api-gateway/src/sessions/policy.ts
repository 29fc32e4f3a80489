/**
 * Session policy: which spec a caller may ask for (image allowlist, idle timeout and lifetime
 * bounds, exec transports), and the SandboxSession object the gateway creates from a request.
 * Pure functions; the JSON schema of the request (routes/sessions/schemas.ts) has already checked
 * types and shapes.
 */
import type { SandboxSession, SandboxSessionSpec } from '@sandbox-platform/api';
import { API_VERSION, KIND } from '@sandbox-platform/api';

import type { SessionPolicy } from '../config.js';
import { ProblemError } from '../errors.js';
import { imageAllowed } from './image-allowlist.js';
import type { TransportKind } from './model.js';

export { imageAllowed };

/** The spec overrides a caller may send (POST /v1/sessions and the create_session tool). */
export interface SessionOverrides {
  image?: string;
  env?: Record<string, string>;
  idleTimeoutSeconds?: number;
  maxLifetimeSeconds?: number;
  shutdownPolicy?: 'Delete' | 'Retain';
  execTransport?: TransportKind;
}

/** Total bytes of env names and values, UTF-8 (what the CRD's CEL rule counts). */
export function envBytes(env: Record<string, string>): number {
  let n = 0;
  for (const [k, v] of Object.entries(env)) n += Buffer.byteLength(k) + Buffer.byteLength(v);
  return n;
}

/** Throws policy-violation (422) naming the first override the policy refuses. */
export function checkPolicy(o: SessionOverrides, policy: SessionPolicy): void {
  if (o.image !== undefined && !imageAllowed(o.image, policy.imageAllowlist)) {
    throw new ProblemError('policy-violation', `image ${o.image} is not on the gateway's image allowlist`);
  }
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
  if (o.env !== undefined) spec.env = Object.entries(o.env).map(([name, value]) => ({ name, value }));
  if (o.shutdownPolicy !== undefined) spec.shutdownPolicy = o.shutdownPolicy;
  if (o.execTransport !== undefined) spec.execTransport = o.execTransport;
  return spec;
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
  if (o.env !== undefined && !sameEnv(o.env, existing.env ?? [])) out.push('env');
  return out;
}

function sameEnv(wanted: Record<string, string>, have: NonNullable<SandboxSessionSpec['env']>): boolean {
  const entries = Object.entries(wanted);
  if (entries.length !== have.length) return false;
  const byName = new Map(have.map((e) => [e.name, e.value ?? '']));
  return entries.every(([k, v]) => byName.get(k) === v);
}
