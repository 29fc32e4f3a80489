/**
 * SessionStore on client-node's CustomObjectsApi and the watch-fed SessionCache. Reads by key come
 * from the cache (a GET on a miss); fresh reads always GET. Status is written (through the lean
 * JSON client, kube/json-client.ts) with a JSON merge patch to the status subresource carrying the
 * resourceVersion the status was computed from, which
 * the API server enforces as an optimistic-concurrency precondition (409 on mismatch); the answer
 * is written through to the cache, a refusal holds the cache entry back. The one spec write,
 * spec.suspend=true for shutdownPolicy Suspend, is a merge patch with the same precondition.
 */
import type * as k8s from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';

import { keyString, type SessionKey } from '../controller/session-key.js';
import { ConflictError, isNotFound, is409 } from './errors.js';
import type { JsonClient } from './json-client.js';
import type { SessionStore, StatusPatch, StatusWrite, WriteOutcome } from './ports.js';
import { toVersion, type SessionCache } from '../state/session-cache.js';
import { WatchLag, type ListedVersion } from '../state/watch-lag.js';

const PAGE = 500;

/**
 * The SessionStore of the watched namespaces (empty: all namespaces). `onWatchStale` is called
 * after a LIST with the sessions whose version listed one LIST earlier the watch has still not
 * delivered (state/watch-lag.ts).
 */
export function createSessionStore(
  api: { readonly custom: k8s.CustomObjectsApi; readonly json: JsonClient },
  namespaces: readonly string[],
  cache: SessionCache,
  onWatchStale: (keys: string[]) => void = () => undefined,
): SessionStore {
  const { custom, json } = api;
  const lag = new WatchLag();
  const listScope = async (ns: string): Promise<SessionKey[]> => {
    const { keys, versions } = await listKeys(custom, ns, cache);
    const stale = lag.afterList(ns, versions, (key) => cache.seen(key));
    if (stale.length > 0) onWatchStale(stale);
    return keys;
  };
  const read = async (key: SessionKey): Promise<SandboxSession | undefined> => {
    try {
      return asSession(await custom.getNamespacedCustomObject(at(key)));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    get: async (key) => cache.get(keyString(key)) ?? read(key),
    read,
    listKeys: async () => {
      const scopes = namespaces.length > 0 ? namespaces : [''];
      const lists = await Promise.all(scopes.map(listScope));
      return lists.flat();
    },
    patchStatus: async (key, patch, resourceVersion): Promise<StatusWrite> => {
      const body: { status: StatusPatch; metadata?: { resourceVersion: string } } = { status: patch };
      if (resourceVersion) body.metadata = { resourceVersion };
      try {
        const updated = asSession(await json.mergePatch(statusPath(key), body));
        cache.written(updated);
        return { resourceVersion: updated.metadata.resourceVersion ?? '' };
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        if (is409(err)) cache.invalidate(keyString(key));
        throw conflict(err);
      }
    },
    suspend: async (key, resourceVersion) => {
      try {
        const updated = asSession(
          await json.mergePatch(objectPath(key), { metadata: { resourceVersion }, spec: { suspend: true } }),
        );
        cache.written(updated);
        return updated;
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        if (is409(err)) cache.invalidate(keyString(key));
        throw conflict(err);
      }
    },
    delete: async (key, preconditions): Promise<WriteOutcome> => {
      try {
        await custom.deleteNamespacedCustomObject({
          ...at(key),
          body: { preconditions, propagationPolicy: 'Background' },
        });
        return 'done';
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        throw conflict(err);
      }
    },
  };
}

function at(key: SessionKey): {
  group: string;
  version: string;
  plural: string;
  namespace: string;
  name: string;
} {
  return { group: GROUP, version: VERSION, plural: PLURAL, namespace: key.namespace, name: key.name };
}

/** API path of a session. */
export function objectPath(key: SessionKey): string {
  const ns = encodeURIComponent(key.namespace);
  return `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}/${encodeURIComponent(key.name)}`;
}

/** API path of a session's status subresource. */
export function statusPath(key: SessionKey): string {
  return `${objectPath(key)}/status`;
}

/**
 * LISTs one namespace ('' = all) page by page, and prunes the cache of what it no longer shows.
 * Returns the keys, and the listed versions for the watch-lag check.
 */
async function listKeys(
  custom: k8s.CustomObjectsApi,
  namespace: string,
  cache: SessionCache,
): Promise<{ keys: SessionKey[]; versions: ListedVersion[] }> {
  const keys: SessionKey[] = [];
  const versions: ListedVersion[] = [];
  let cont: string | undefined;
  let listVersion: string | undefined;
  do {
    const base = { group: GROUP, version: VERSION, plural: PLURAL, limit: PAGE, _continue: cont };
    const page = (await (namespace
      ? custom.listNamespacedCustomObject({ ...base, namespace })
      : custom.listClusterCustomObject(base))) as {
      items?: SandboxSession[];
      metadata?: { continue?: string; resourceVersion?: string };
    };
    // Every page of a paged LIST is served from the first page's snapshot.
    listVersion ??= page.metadata?.resourceVersion;
    for (const item of page.items ?? []) collect(item, keys, versions);
    cont = page.metadata?.continue || undefined;
  } while (cont);
  cache.prune(namespace, new Set(keys.map(keyString)), listVersion);
  return { keys, versions };
}

/** Adds a listed session's key, and its version where it has a uid and an integer resourceVersion. */
function collect(item: SandboxSession, keys: SessionKey[], versions: ListedVersion[]): void {
  const { namespace, name, uid, resourceVersion } = item.metadata;
  if (!namespace || !name) return;
  keys.push({ namespace, name });
  const rv = toVersion(resourceVersion);
  if (uid && rv !== undefined) versions.push({ key: keyString({ namespace, name }), uid, rv });
}

function asSession(value: unknown): SandboxSession {
  const s = value as Partial<SandboxSession> | undefined;
  if (!s || typeof s !== 'object' || !s.metadata || typeof s.metadata !== 'object') {
    throw new Error('the API server returned a SandboxSession without metadata');
  }
  return { ...s, metadata: s.metadata, spec: s.spec ?? {} };
}

function conflict(err: unknown): unknown {
  return is409(err) ? new ConflictError('the SandboxSession changed meanwhile', { cause: err }) : err;
}
