/**
 * SessionStore on client-node's CustomObjectsApi. Status is written with a JSON merge patch to the
 * status subresource; when a resourceVersion is given it travels in the patch body, which the API
 * server enforces as an optimistic-concurrency precondition (409 on mismatch).
 */
import type * as k8s from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';

import type { SessionKey } from '../controller/session-key.js';
import { MERGE_PATCH } from './clients.js';
import { ConflictError, isNotFound, is409 } from './errors.js';
import type { SessionStore, StatusPatch, WriteOutcome } from './ports.js';

const PAGE = 500;

/** The SessionStore of the watched scope ('' = all namespaces). */
export function createSessionStore(custom: k8s.CustomObjectsApi, watchNamespace: string): SessionStore {
  const at = (
    key: SessionKey,
  ): { group: string; version: string; plural: string; namespace: string; name: string } => ({
    group: GROUP,
    version: VERSION,
    plural: PLURAL,
    namespace: key.namespace,
    name: key.name,
  });
  return {
    get: async (key) => {
      try {
        return asSession(await custom.getNamespacedCustomObject(at(key)));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    listKeys: () => listKeys(custom, watchNamespace),
    patchStatus: (key, patch, resourceVersion) => {
      const body: { status: StatusPatch; metadata?: { resourceVersion: string } } = { status: patch };
      if (resourceVersion !== undefined) body.metadata = { resourceVersion };
      return written(() => custom.patchNamespacedCustomObjectStatus({ ...at(key), body }, MERGE_PATCH));
    },
    delete: (key, preconditions) =>
      written(() =>
        custom.deleteNamespacedCustomObject({
          ...at(key),
          body: { preconditions, propagationPolicy: 'Background' },
        }),
      ),
  };
}

async function listKeys(custom: k8s.CustomObjectsApi, namespace: string): Promise<SessionKey[]> {
  const keys: SessionKey[] = [];
  let cont: string | undefined;
  do {
    const base = { group: GROUP, version: VERSION, plural: PLURAL, limit: PAGE, _continue: cont };
    const page = (await (namespace
      ? custom.listNamespacedCustomObject({ ...base, namespace })
      : custom.listClusterCustomObject(base))) as {
      items?: SandboxSession[];
      metadata?: { continue?: string };
    };
    for (const item of page.items ?? []) {
      const { namespace: ns, name } = item.metadata;
      if (ns && name) keys.push({ namespace: ns, name });
    }
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return keys;
}

function asSession(value: unknown): SandboxSession {
  const s = value as Partial<SandboxSession> | undefined;
  if (!s || typeof s !== 'object' || !s.metadata || typeof s.metadata !== 'object') {
    throw new Error('the API server returned a SandboxSession without metadata');
  }
  return { ...s, metadata: s.metadata, spec: s.spec ?? {} };
}

async function written(call: () => Promise<unknown>): Promise<WriteOutcome> {
  try {
    await call();
    return 'done';
  } catch (err) {
    if (isNotFound(err)) return 'gone';
    if (is409(err)) throw new ConflictError('the SandboxSession changed meanwhile', { cause: err });
    throw err;
  }
}
