/** Tenant scoping: which namespace a request acts in, decided before anything is read. */
import { isDnsLabel } from '@sandbox-platform/api';

import type { Principal } from '../auth/keys.js';
import { ProblemError } from '../errors.js';

/** The namespace of a request: the one asked for (if this key may use it) or the key's default. */
export function resolveNamespace(principal: Principal, requested: string | undefined): string {
  if (requested === undefined || requested === '') return principal.defaultNamespace;
  if (!isDnsLabel(requested)) throw new ProblemError('invalid-request', 'namespace must be a DNS label');
  if (!principal.namespaces.has(requested)) {
    throw new ProblemError('forbidden', `this API key may not use namespace ${requested}`);
  }
  return requested;
}

/** Validates a session name before any Kubernetes call. */
export function assertSessionName(name: string): void {
  if (!isDnsLabel(name)) {
    throw new ProblemError(
      'invalid-request',
      'session name must be a DNS label: at most 63 lowercase letters, digits and "-", starting and ending with a letter or digit',
    );
  }
}
