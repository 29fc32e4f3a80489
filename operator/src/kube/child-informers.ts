/**
 * The owned-object informers (Pods, Secrets and workspace PersistentVolumeClaims with
 * app.kubernetes.io/managed-by=sandbox-operator) and the mapping of their events to session keys.
 * One informer of each per watched namespace, so that namespaced Roles suffice (a LIST or watch
 * across namespaces needs a ClusterRole), or one of each cluster-wide when no namespace is named.
 */
import type * as k8s from '@kubernetes/client-node';

import { CHILD_SELECTOR } from '../resources/metadata.js';
import type { Logger } from '../telemetry/log-port.js';
import { OwnedInformer, type ListPage } from './owned-informer.js';
import { ownerKey } from '../state/owner-key.js';
import { projectClaim, projectPod, projectSecret } from '../state/projections.js';
import type { ClaimView, PodView, SecretView } from '../state/views.js';

/** Cached views by namespace and name, across the informers of every watched namespace. */
export interface ViewCache<V> {
  get(namespace: string, name: string): V | undefined;
}

/** The informers. */
export interface ChildInformers {
  readonly pods: ViewCache<PodView>;
  readonly secrets: ViewCache<SecretView>;
  readonly claims: ViewCache<ClaimView>;
  /** Every informer, to start and stop. */
  readonly all: ReadonlyArray<OwnedInformer<PodView> | OwnedInformer<SecretView> | OwnedInformer<ClaimView>>;
}

/** The child resources, as in API paths. */
export type Resource = 'pods' | 'secrets' | 'persistentvolumeclaims';
type AnyView = PodView | SecretView | ClaimView;

/**
 * Builds (does not start) the informers; `enqueue` receives the session key of every change.
 * `namespaces` empty: cluster-wide.
 */
export function createChildInformers(
  kc: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  namespaces: readonly string[],
  opts: {
    readonly logger: Logger;
    readonly enqueue: (resource: Resource, key: string) => void;
    /** True for an ADDED object exactly as this process created it (no enqueue: nothing new). */
    readonly isEcho?: (resource: Resource, view: AnyView) => boolean;
  },
): ChildInformers {
  const scopes = namespaces.length > 0 ? namespaces : [''];
  const onChange =
    (resource: Resource) =>
    (view: AnyView, change: 'added' | 'updated' | 'deleted'): void => {
      const key = ownerKey(view.metadata);
      if (!key || (change === 'added' && opts.isEcho?.(resource, view))) return;
      opts.enqueue(resource, key);
    };
  const pods = new Map<string, OwnedInformer<PodView>>();
  const secrets = new Map<string, OwnedInformer<SecretView>>();
  const claims = new Map<string, OwnedInformer<ClaimView>>();
  for (const ns of scopes) {
    pods.set(
      ns,
      new OwnedInformer<PodView>({
        ...common(kc, ns, 'pods', opts.logger),
        listPage: (labelSelector, limit, _continue) =>
          ns
            ? core.listNamespacedPod({ namespace: ns, labelSelector, limit, _continue })
            : core.listPodForAllNamespaces({ labelSelector, limit, _continue }),
        project: projectPod,
        onChange: onChange('pods'),
      }),
    );
    secrets.set(
      ns,
      new OwnedInformer<SecretView>({
        ...common(kc, ns, 'secrets', opts.logger),
        listPage: (labelSelector, limit, _continue): Promise<ListPage> =>
          ns
            ? core.listNamespacedSecret({ namespace: ns, labelSelector, limit, _continue })
            : core.listSecretForAllNamespaces({ labelSelector, limit, _continue }),
        project: projectSecret,
        onChange: onChange('secrets'),
      }),
    );
    claims.set(
      ns,
      new OwnedInformer<ClaimView>({
        ...common(kc, ns, 'persistentvolumeclaims', opts.logger),
        listPage: (labelSelector, limit, _continue): Promise<ListPage> =>
          ns
            ? core.listNamespacedPersistentVolumeClaim({ namespace: ns, labelSelector, limit, _continue })
            : core.listPersistentVolumeClaimForAllNamespaces({ labelSelector, limit, _continue }),
        project: projectClaim,
        onChange: onChange('persistentvolumeclaims'),
      }),
    );
  }
  return {
    pods: routed(pods),
    secrets: routed(secrets),
    claims: routed(claims),
    all: [...pods.values(), ...secrets.values(), ...claims.values()],
  };
}

function common(
  kc: k8s.KubeConfig,
  ns: string,
  resource: Resource,
  logger: Logger,
): { kc: k8s.KubeConfig; resource: string; path: string; labelSelector: string; logger: Logger } {
  const path = `/api/v1/${ns ? `namespaces/${ns}/` : ''}${resource}`;
  return {
    kc,
    resource: ns ? `${resource} in ${ns}` : resource,
    path,
    labelSelector: CHILD_SELECTOR,
    logger,
  };
}

/** Looks a view up in the informer of its namespace (or the cluster-wide one, keyed ''). */
function routed<V extends AnyView>(informers: ReadonlyMap<string, OwnedInformer<V>>): ViewCache<V> {
  return {
    get: (namespace, name) => (informers.get(namespace) ?? informers.get(''))?.get(namespace, name),
  };
}
