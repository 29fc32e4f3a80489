/**
 * PodStore and SecretStore on client-node: reads from the owned-object informers, writes to the
 * API server. Deletes carry a UID precondition, so the object deleted is exactly the one judged
 * ours (never a same-named object created meanwhile).
 */
import type * as k8s from '@kubernetes/client-node';

import { AlreadyExistsError, isNotFound, is409 } from './errors.js';
import type { ViewCache } from './child-informers.js';
import type { PodStore, SecretStore, WriteOutcome } from './ports.js';
import { projectPod, projectSecret } from './projections.js';
import type { PodView, SecretView } from './views.js';

/** Pods: cache from the informer, writes through CoreV1Api. */
export function createPodStore(core: k8s.CoreV1Api, informer: ViewCache<PodView>): PodStore {
  return {
    cached: (namespace, name) => informer.get(namespace, name),
    read: async (namespace, name) => {
      try {
        return projectPod(await core.readNamespacedPod({ namespace, name }));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    create: async (namespace, body) => {
      try {
        return required(projectPod(await core.createNamespacedPod({ namespace, body })), 'Pod');
      } catch (err) {
        throw alreadyExists(err, 'Pod', body.metadata?.name);
      }
    },
    delete: (namespace, name, uid) =>
      deleted(() => core.deleteNamespacedPod({ namespace, name, body: { preconditions: { uid } } })),
  };
}

/** Secrets: cache from the informer (never their data), writes through CoreV1Api. */
export function createSecretStore(core: k8s.CoreV1Api, informer: ViewCache<SecretView>): SecretStore {
  return {
    cached: (namespace, name) => informer.get(namespace, name),
    read: async (namespace, name) => {
      try {
        return projectSecret(await core.readNamespacedSecret({ namespace, name }));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    create: async (namespace, body) => {
      try {
        return required(projectSecret(await core.createNamespacedSecret({ namespace, body })), 'Secret');
      } catch (err) {
        throw alreadyExists(err, 'Secret', body.metadata?.name);
      }
    },
    delete: (namespace, name, uid) =>
      deleted(() => core.deleteNamespacedSecret({ namespace, name, body: { preconditions: { uid } } })),
  };
}

function required<V>(view: V | undefined, kind: string): V {
  if (!view) throw new Error(`the API server returned an incomplete ${kind}`);
  return view;
}

function alreadyExists(err: unknown, kind: string, name: string | undefined): unknown {
  return is409(err) ? new AlreadyExistsError(`${kind} ${name ?? ''} already exists`, { cause: err }) : err;
}

/** Runs a delete; NotFound means gone, and a UID precondition failure (409) means it is not ours any more. */
async function deleted(call: () => Promise<unknown>): Promise<WriteOutcome> {
  try {
    await call();
    return 'done';
  } catch (err) {
    if (isNotFound(err) || is409(err)) return 'gone';
    throw err;
  }
}
