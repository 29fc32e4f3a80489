/**
 * Reads the Secrets a session's spec.env names (valueFrom.secretKeyRef; docs/adr/0016, "Env,
 * Secrets and startup at bind time"): one GET of one Secret of the session's own namespace, by
 * name, when a session is about to get a Pod. No informer: the operator caches no tenant Secret
 * (its memory would hold every Secret of every sandbox namespace), and reads one only for the
 * session that names it.
 *
 * The first read asks the API server's watch cache (`resourceVersion=0`: no etcd round trip, the
 * read sits on a warm claim's critical path); a miss there is asked again from etcd (a Secret
 * created a moment ago may not have reached the cache), so "not found" is never a cache lag.
 * Values are decoded here and go nowhere but the caller: never a log line, an Event or an error
 * message (a failed read's error carries the API server's Status, which holds no data).
 */
import { isNotFound } from './errors.js';
import type { JsonClient } from './json-client.js';

/** A Secret's data, decoded; undefined when the Secret does not exist. */
export type SecretData = Readonly<Record<string, Buffer>>;

/** Reads one Secret of a namespace. */
export interface TenantSecretReader {
  read(namespace: string, name: string): Promise<SecretData | undefined>;
}

/** The reader over the JSON client. */
export function createTenantSecretReader(json: Pick<JsonClient, 'get'>): TenantSecretReader {
  const get = async (path: string): Promise<SecretData | undefined> => {
    try {
      return decode(await json.get(path));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw new Error('read a Secret named by spec.env', { cause: err });
    }
  };
  return {
    read: async (namespace, name) => {
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`;
      return (await get(`${path}?resourceVersion=0`)) ?? (await get(path));
    },
  };
}

function decode(object: unknown): SecretData {
  const data = (object as { data?: Record<string, unknown> } | undefined)?.data ?? {};
  const out: Record<string, Buffer> = {};
  for (const [key, value] of Object.entries(data)) {
    if (typeof value === 'string') out[key] = Buffer.from(value, 'base64');
  }
  return out;
}
