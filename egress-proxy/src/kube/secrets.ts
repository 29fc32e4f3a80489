/**
 * Credentials of injected headers, read from Secrets of the session's namespace with a short
 * cache (a rotated Secret applies within `ttlMs`). Values are never logged; an error names the
 * Secret and key only.
 */
import * as k8s from '@kubernetes/client-node';

import type { SecretReader } from '../sessions.js';

/** Largest credential accepted, bytes (a header value). */
export const CREDENTIAL_MAX_BYTES = 8192;

/** A SecretReader over the API server. */
export class KubeSecretReader implements SecretReader {
  private readonly cache = new Map<string, { value: Promise<Record<string, string>>; at: number }>();
  private readonly core: k8s.CoreV1Api;

  constructor(
    kc: k8s.KubeConfig,
    private readonly ttlMs = 5000,
  ) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }

  async read(namespace: string, name: string, key: string): Promise<string> {
    const id = `${namespace}/${name}`;
    let hit = this.cache.get(id);
    if (!hit || Date.now() - hit.at > this.ttlMs) {
      const value = this.core.readNamespacedSecret({ namespace, name }).then((s) => s.data ?? {});
      value.catch(() => this.cache.delete(id));
      hit = { value, at: Date.now() };
      this.cache.set(id, hit);
      if (this.cache.size > 1000) this.cache.delete(this.cache.keys().next().value!);
    }
    const data = await hit.value.catch((err: unknown) => {
      throw new Error(`secret ${namespace}/${name} unreadable`, { cause: err });
    });
    const b64 = data[key];
    if (b64 === undefined) throw new Error(`secret ${namespace}/${name} has no key ${key}`);
    const value = Buffer.from(b64, 'base64');
    // A header value: no control characters (CR/LF would split the request), bounded.
    if (value.length > CREDENTIAL_MAX_BYTES || value.some((b) => (b < 0x20 && b !== 0x09) || b === 0x7f)) {
      throw new Error(`secret ${namespace}/${name} key ${key} is not a valid header value`);
    }
    return value.toString('latin1');
  }
}
