/**
 * PodStore, SecretStore and ClaimStore on client-node: reads from the owned-object informers (with
 * what this process just created overlaid until the informer shows it: state/created-overlay.ts),
 * creates through the lean JSON client (kube/json-client.ts; the answer goes straight to the
 * projection), other writes and fresh reads through CoreV1Api. Deletes carry a UID precondition,
 * so the object deleted is exactly the one judged ours (never a same-named object created
 * meanwhile).
 */
import type * as k8s from '@kubernetes/client-node';

import { AlreadyExistsError, isNotFound, is409, QuotaRefusedError, quotaRefusal } from './errors.js';
import type { ViewCache } from './child-informers.js';
import { CreatedOverlay } from '../state/created-overlay.js';
import { DeletedOverlay } from '../state/deleted-overlay.js';
import type { JsonClient } from './json-client.js';
import type { ClaimStore, PodStore, SecretStore, StorageClassLookup, WriteOutcome } from './ports.js';
import { projectClaim, projectPod, projectSecret } from '../state/projections.js';
import type { ClaimView, PodView, SecretView } from '../state/views.js';

type ChildKind = 'Pod' | 'Secret' | 'PersistentVolumeClaim';

/** The clients a child store writes through. */
export interface ChildApi {
  readonly core: k8s.CoreV1Api;
  readonly json: JsonClient;
}

/** Pods: cache from the informer, writes to the API server. */
export function createPodStore(
  { core, json }: ChildApi,
  informer: ViewCache<PodView>,
  created: CreatedOverlay<PodView> = new CreatedOverlay<PodView>(),
  removed: DeletedOverlay<PodView> = new DeletedOverlay<PodView>(),
): PodStore {
  return {
    cached: (namespace, name) =>
      removed.get(namespace, name, created.get(namespace, name, informer.get(namespace, name))),
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
        const view = required(projectPod(await json.create(collection(namespace, 'pods'), body)), 'Pod');
        created.add(namespace, view.metadata.name, view);
        return view;
      } catch (err) {
        throw createError(err, 'Pod', body.metadata?.name);
      }
    },
    delete: async (namespace, name, uid) => {
      created.forget(namespace, name);
      const outcome = await deleted(() =>
        core.deleteNamespacedPod({ namespace, name, body: { preconditions: { uid } } }),
      );
      // Until the informer shows it, the deleted Pod reads as being deleted (state/deleted-overlay.ts).
      if (outcome === 'done') removed.add(namespace, name, uid);
      return outcome;
    },
  };
}

/** Secrets: cache from the informer (never their data), writes to the API server. */
export function createSecretStore(
  { core, json }: ChildApi,
  informer: ViewCache<SecretView>,
  created: CreatedOverlay<SecretView> = new CreatedOverlay<SecretView>(),
): SecretStore {
  return {
    cached: (namespace, name) => created.get(namespace, name, informer.get(namespace, name)),
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
        const view = required(
          projectSecret(await json.create(collection(namespace, 'secrets'), body)),
          'Secret',
        );
        created.add(namespace, view.metadata.name, view);
        return view;
      } catch (err) {
        throw createError(err, 'Secret', body.metadata?.name);
      }
    },
    delete: (namespace, name, uid) => {
      created.forget(namespace, name);
      return deleted(() =>
        core.deleteNamespacedSecret({ namespace, name, body: { preconditions: { uid } } }),
      );
    },
  };
}

/** Workspace claims: cache from the informer, writes to the API server. */
export function createClaimStore(
  { core, json }: ChildApi,
  informer: ViewCache<ClaimView>,
  created: CreatedOverlay<ClaimView> = new CreatedOverlay<ClaimView>(),
): ClaimStore {
  return {
    cached: (namespace, name) => created.get(namespace, name, informer.get(namespace, name)),
    read: async (namespace, name) => {
      try {
        return projectClaim(await core.readNamespacedPersistentVolumeClaim({ namespace, name }));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    create: async (namespace, body) => {
      try {
        const view = required(
          projectClaim(await json.create(collection(namespace, 'persistentvolumeclaims'), body)),
          'PersistentVolumeClaim',
        );
        created.add(namespace, view.metadata.name, view);
        return view;
      } catch (err) {
        throw createError(err, 'PersistentVolumeClaim', body.metadata?.name);
      }
    },
    delete: (namespace, name, uid) => {
      created.forget(namespace, name);
      return deleted(() =>
        core.deleteNamespacedPersistentVolumeClaim({ namespace, name, body: { preconditions: { uid } } }),
      );
    },
  };
}

/**
 * StorageClass existence by GET (only asked while a workspace claim is unbound, so no informer).
 * A refused or failed read is "cannot tell", logged once per kind of failure by the caller.
 */
export function createStorageClassLookup(
  storage: k8s.StorageV1Api,
  onError: (err: unknown) => void,
): StorageClassLookup {
  return {
    exists: async (name) => {
      try {
        await storage.readStorageClass({ name });
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        onError(err);
        return undefined;
      }
    },
  };
}

function collection(namespace: string, resource: 'pods' | 'secrets' | 'persistentvolumeclaims'): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/${resource}`;
}

function required<V>(view: V | undefined, kind: string): V {
  if (!view) throw new Error(`the API server returned an incomplete ${kind}`);
  return view;
}

/** A failed create as the controller acts on it: AlreadyExistsError, QuotaRefusedError, or as is. */
function createError(err: unknown, kind: ChildKind, name: string | undefined): unknown {
  if (is409(err)) return new AlreadyExistsError(`${kind} ${name ?? ''} already exists`, { cause: err });
  const quota = quotaRefusal(err);
  return quota === undefined ? err : new QuotaRefusedError(kind, name ?? '', quota, { cause: err });
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
