/**
 * API keys: a JSON file (mounted from a Secret) mapping each key to the namespaces it may use.
 *
 *   { "keys": [ { "id": "team-a", "sha256": "<hex of SHA-256(key)>", "namespaces": ["team-a"] },
 *               { "id": "ci", "key": "<plain key, >= 24 chars>", "namespaces": ["ci", "ci-2"],
 *                 "defaultNamespace": "ci-2" } ] }
 *
 * Storing `sha256` is preferred: the file then holds no usable secret. Presented keys are hashed
 * and compared with every entry in constant time (no early exit), so timing reveals neither which
 * entry matched nor how much of a hash did.
 */
import { createHash, hash, timingSafeEqual } from 'node:crypto';

import { Ajv } from 'ajv';

/** Who is calling: the key id (safe to log) and the namespaces it may use. */
export interface Principal {
  keyId: string;
  namespaces: ReadonlySet<string>;
  /** Namespace used when a request names none. */
  defaultNamespace: string;
}

/** Resolves a presented bearer key to a principal. */
export interface KeyAuthenticator {
  authenticate(presented: string): Principal | undefined;
}

const MIN_PLAIN_KEY_LENGTH = 24;

const fileSchema = {
  type: 'object',
  required: ['keys'],
  additionalProperties: false,
  properties: {
    keys: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['id', 'namespaces'],
        additionalProperties: false,
        oneOf: [{ required: ['sha256'] }, { required: ['key'] }],
        properties: {
          id: { type: 'string', minLength: 1, maxLength: 128 },
          sha256: { type: 'string', pattern: '^[0-9a-fA-F]{64}$' },
          key: { type: 'string', minLength: MIN_PLAIN_KEY_LENGTH },
          namespaces: {
            type: 'array',
            minItems: 1,
            items: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' },
          },
          defaultNamespace: { type: 'string' },
        },
      },
    },
  },
} as const;

interface KeyEntry {
  id: string;
  sha256?: string;
  key?: string;
  namespaces: string[];
  defaultNamespace?: string;
}

interface StoredKey {
  digest: Buffer;
  principal: Principal;
}

/** SHA-256 of a key, hex (what the `sha256` field holds). */
export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** In-memory key set built from the parsed file. */
export class ApiKeys implements KeyAuthenticator {
  private readonly keys: StoredKey[];

  private constructor(keys: StoredKey[]) {
    this.keys = keys;
  }

  /**
   * Parses and validates the key file's text; `servedNamespaces` are the namespaces this gateway
   * watches: a key naming any other namespace is a configuration error (fail fast at boot).
   */
  static parse(text: string, servedNamespaces: readonly string[]): ApiKeys {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (cause) {
      throw new Error('API key file: not valid JSON', { cause });
    }
    const ajv = new Ajv({ allErrors: true });
    const validate = ajv.compile<{ keys: KeyEntry[] }>(fileSchema);
    if (!validate(data))
      throw new Error(`API key file: ${ajv.errorsText(validate.errors, { dataVar: 'file' })}`);
    const served = new Set(servedNamespaces);
    const ids = new Set<string>();
    const keys = data.keys.map((entry) => {
      if (ids.has(entry.id)) throw new Error(`API key file: duplicate key id ${entry.id}`);
      ids.add(entry.id);
      return toStored(entry, served);
    });
    return new ApiKeys(keys);
  }

  /** Number of keys loaded (for the startup log line). */
  get size(): number {
    return this.keys.length;
  }

  authenticate(presented: string): Principal | undefined {
    if (presented.length === 0) return undefined;
    // One-shot hash (no Hash object): about 2x cheaper for a key-sized input; same SHA-256.
    const digest = hash('sha256', presented, 'buffer');
    let found: Principal | undefined;
    for (const k of this.keys) {
      // Every entry is compared, matched or not: the loop's duration does not depend on the key.
      if (timingSafeEqual(digest, k.digest) && found === undefined) found = k.principal;
    }
    return found;
  }
}

function toStored(entry: KeyEntry, served: ReadonlySet<string>): StoredKey {
  const outside = entry.namespaces.filter((ns) => !served.has(ns));
  if (outside.length > 0) {
    throw new Error(
      `API key file: key ${entry.id} names namespaces this gateway does not serve: ${outside.join(', ')}`,
    );
  }
  const defaultNamespace = entry.defaultNamespace ?? entry.namespaces[0]!;
  if (!entry.namespaces.includes(defaultNamespace)) {
    throw new Error(`API key file: key ${entry.id}: defaultNamespace is not one of its namespaces`);
  }
  const hex = entry.sha256 ?? hashKey(entry.key!);
  return {
    digest: Buffer.from(hex.toLowerCase(), 'hex'),
    principal: { keyId: entry.id, namespaces: new Set(entry.namespaces), defaultNamespace },
  };
}
