/**
 * The two owned-object informers (Pods and Secrets with app.kubernetes.io/managed-by=
 * sandbox-operator, in the watched namespace or cluster-wide) and the mapping of their events to
 * session keys.
 */
import type * as k8s from '@kubernetes/client-node';

import { CHILD_SELECTOR } from '../resources/metadata.js';
import type { Logger } from '../telemetry/log-port.js';
import { OwnedInformer } from './owned-informer.js';
import { ownerKey } from './owner-key.js';
import { projectPod, projectSecret } from './projections.js';
import type { PodView, SecretView } from './views.js';

/** The informers. */
export interface ChildInformers {
  readonly pods: OwnedInformer<PodView>;
  readonly secrets: OwnedInformer<SecretView>;
}

/** Builds (does not start) the informers; `enqueue` receives the session key of every change. */
export function createChildInformers(
  kc: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  watchNamespace: string,
  opts: { readonly logger: Logger; readonly enqueue: (resource: 'pods' | 'secrets', key: string) => void },
): ChildInformers {
  const ns = watchNamespace;
  const base = `/api/v1/${ns ? `namespaces/${ns}/` : ''}`;
  const onChange =
    (resource: 'pods' | 'secrets') =>
    (view: PodView | SecretView): void => {
      const key = ownerKey(view.metadata);
      if (key) opts.enqueue(resource, key);
    };
  return {
    pods: new OwnedInformer<PodView>({
      kc,
      resource: 'pods',
      path: `${base}pods`,
      labelSelector: CHILD_SELECTOR,
      listPage: (labelSelector, limit, _continue) =>
        ns
          ? core.listNamespacedPod({ namespace: ns, labelSelector, limit, _continue })
          : core.listPodForAllNamespaces({ labelSelector, limit, _continue }),
      project: projectPod,
      onChange: onChange('pods'),
      logger: opts.logger,
    }),
    secrets: new OwnedInformer<SecretView>({
      kc,
      resource: 'secrets',
      path: `${base}secrets`,
      labelSelector: CHILD_SELECTOR,
      listPage: (labelSelector, limit, _continue) =>
        ns
          ? core.listNamespacedSecret({ namespace: ns, labelSelector, limit, _continue })
          : core.listSecretForAllNamespaces({ labelSelector, limit, _continue }),
      project: projectSecret,
      onChange: onChange('secrets'),
      logger: opts.logger,
    }),
  };
}
