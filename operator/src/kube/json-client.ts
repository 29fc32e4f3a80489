/**
 * Plain JSON requests to the API server for the reconcile's hot writes (Secret and Pod creates,
 * status patches) and the reads of a warm claim's Secret references (kube/tenant-secrets.ts): the body is our own wire-format object, sent as JSON; the answer is parsed
 * with JSON.parse and handed to the projections (state/projections.ts), which accept plain JSON.
 * client-node's generated APIs would first convert the body to and the answer from its model
 * classes, about half the client CPU of a create here (docs/adr/0007). Server, TLS agent and
 * authentication are client-node's, shared with the generated clients (kube/clients.ts).
 *
 * Failures are client-node's ApiException (code + parsed Status body), so kube/errors.ts reads
 * them exactly like those of the generated clients.
 */
import http from 'node:http';
import https from 'node:https';

import * as k8s from '@kubernetes/client-node';

import type { RequestAuth } from './clients.js';

/** Content types of the writes. */
export const CONTENT_TYPES = {
  json: 'application/json',
  mergePatch: 'application/merge-patch+json',
} as const;

/** JSON requests to one API server. */
export interface JsonClient {
  /** POST `body` to `path` (a collection); resolves with the created object. */
  create(path: string, body: unknown): Promise<unknown>;
  /** PATCH `path` with `body` as a JSON merge patch; resolves with the updated object. */
  mergePatch(path: string, body: unknown): Promise<unknown>;
  /** GET `path` (an object, with any query); resolves with it. */
  get(path: string): Promise<unknown>;
}

/** Client settings. */
export interface JsonClientOptions {
  readonly server: string;
  readonly auth: RequestAuth;
  readonly timeoutMs: number;
}

/** Builds the client. */
export function createJsonClient(opts: JsonClientOptions): JsonClient {
  const base = new URL(opts.server);
  const send = base.protocol === 'http:' ? http.request : https.request;
  const prefix = base.pathname.replace(/\/$/, '');
  const call = async (method: string, path: string, body: unknown, contentType: string): Promise<unknown> => {
    const headers = await opts.auth.headers();
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = send(
        {
          protocol: base.protocol,
          hostname: base.hostname.replace(/^\[|\]$/g, ''),
          port: base.port || undefined,
          method,
          path: prefix + path,
          agent: opts.auth.agent(),
          signal: AbortSignal.timeout(opts.timeoutMs),
          headers: {
            ...headers,
            accept: CONTENT_TYPES.json,
            ...(payload === undefined
              ? {}
              : { 'content-type': contentType, 'content-length': payload.length }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const code = res.statusCode ?? 0;
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              parsed = text;
            }
            if (code >= 200 && code < 300 && typeof parsed === 'object' && parsed !== null) resolve(parsed);
            else
              reject(
                new k8s.ApiException(
                  code,
                  `${method} ${path} answered ${code}`,
                  parsed,
                  res.headers as Record<string, string>,
                ),
              );
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  };
  return {
    create: (path, body) => call('POST', path, body, CONTENT_TYPES.json),
    mergePatch: (path, body) => call('PATCH', path, body, CONTENT_TYPES.mergePatch),
    get: (path) => call('GET', path, undefined, CONTENT_TYPES.json),
  };
}
