/**
 * Which pool a session is bound from (docs/adr/0016-warm-pools.md). Pure.
 *
 * - spec.poolRef names the pool. The CRD refuses Pod-shaping fields next to it, so the session is
 *   the pool's template by construction.
 * - Without poolRef, the namespace's default pool (spec.namespaceDefault; the oldest when several
 *   say so, then by name) serves the sessions that shape nothing themselves: no image,
 *   resources, runtimeClassName, nodeSelector or tolerations, imagePullPolicy IfNotPresent, the
 *   Agent transport, an emptyDir workspace of the template's size. spec.env and spec.startup do
 *   not shape the Pod: they arrive in the bind (docs/adr/0016). Anything else asked for
 *   something the warm Pods are not, and is created cold as before.
 */
import type { SandboxSessionSpec } from '@sandbox-platform/api';

import type { PoolView } from './pool-view.js';

/** Session fields that shape the Pod and have no default: any of them set means "not the template". */
const SHAPING = ['image', 'resources', 'runtimeClassName', 'nodeSelector', 'tolerations'] as const;

/** The CRD's default workspace size (spec.workspace.sizeLimit of both kinds). */
const DEFAULT_WORKSPACE_SIZE = '1Gi';

/** True when a session without poolRef may be bound from this pool's Pods. */
export function fitsTemplate(spec: SandboxSessionSpec, pool: PoolView): boolean {
  const templateSize = pool.spec.template?.workspace?.sizeLimit ?? DEFAULT_WORKSPACE_SIZE;
  const workspace = spec.workspace ?? {};
  return (
    SHAPING.every((field) => spec[field] === undefined) &&
    (spec.imagePullPolicy ?? 'IfNotPresent') === 'IfNotPresent' &&
    (spec.execTransport ?? 'Agent') === 'Agent' &&
    workspace.persistentVolumeClaim === undefined &&
    String(workspace.sizeLimit ?? DEFAULT_WORKSPACE_SIZE) === String(templateSize)
  );
}

/** The namespace's default pool among its pools: the oldest with namespaceDefault, then by name. */
export function defaultPool(pools: readonly PoolView[]): PoolView | undefined {
  return pools
    .filter((p) => p.spec.namespaceDefault === true && !p.metadata.deletionTimestamp)
    .sort(
      (a, b) =>
        (a.metadata.createdAt ?? '').localeCompare(b.metadata.createdAt ?? '') ||
        a.metadata.name.localeCompare(b.metadata.name),
    )[0];
}
