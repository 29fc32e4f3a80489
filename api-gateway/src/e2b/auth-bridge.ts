/**
 * The E2B credential bridge: a hook that runs just before the gateway's authentication hook
 * (registered right before plugins/auth.ts in app.ts) and turns the credentials the E2B SDKs send
 * into what that hook understands (keys.ts explains the two forms). Every other route passes
 * untouched. Thus the E2B routes are authenticated, rate- and concurrency-limited, shed and
 * tenant-scoped by the same hooks as the REST API, never by a copy of them.
 *
 * envd calls (under the envd prefix) must carry `X-Access-Token` and name their sandbox in
 * `E2b-Sandbox-Id`: no token is 401 before anything is looked up; a sandbox that does not exist
 * (or is being deleted) is 502 "not found" (what E2B's own proxy answers, which the SDKs report
 * as a sandbox that is no longer running); a token that is not that session's is 401. The
 * principal of a good call is the key that created the session, limited to its namespace.
 */
import type { IncomingMessage } from 'node:http';

import { ANNOTATIONS, type SandboxSession } from '@sandbox-platform/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import type { Principal } from '../auth/keys.js';
import { ProblemError } from '../errors.js';
import type { SessionStore } from '../sessions/store.js';
import type { AccessTokens } from './access-token.js';
import { parseSandboxId, type SandboxRef } from './ids.js';
import type { E2bKeyAuthenticator } from './keys.js';

/** Where the E2B control API is mounted (E2B_API_URL is the gateway's URL plus this). */
export const E2B_API_PREFIX = '/e2b';
/** Where the envd API is mounted (E2B_SANDBOX_URL is the gateway's URL plus this). */
export const E2B_ENVD_PREFIX = '/e2b/envd';

/** What an authenticated envd call is about, for its handler. */
export interface EnvdCall {
  sandbox: SandboxRef;
  /** The session's UID when the token was checked. */
  uid: string;
  /** The user an SDK named (`Authorization: Basic`), if any: checked by the handlers. */
  user: string | undefined;
  principal: Principal;
}

/** Options of the bridge. */
export interface AuthBridgeOptions {
  store: SessionStore;
  tokens: AccessTokens;
  keys: E2bKeyAuthenticator;
  /** The namespaces this gateway serves (an ID naming another is not found). */
  namespaces: readonly string[];
}

const calls = new WeakMap<IncomingMessage, EnvdCall>();

/** The authenticated envd call of a request (set by the bridge); throws when there is none. */
export function envdCallOf(req: IncomingMessage): EnvdCall {
  const call = calls.get(req);
  if (!call) throw new ProblemError('unauthorized', 'missing E2B access token');
  return call;
}

/** The user named by `Authorization: Basic base64(user:)`, as envd's SDK clients send it. */
export function basicUser(header: string | undefined): string | undefined {
  const m = /^Basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(header ?? '');
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? text : text.slice(0, colon);
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The principal envd calls of a session act as: its creating key, in its namespace only. */
export function sessionPrincipal(session: SandboxSession, ref: SandboxRef): Principal {
  const creator = session.metadata.annotations?.[ANNOTATIONS.createdByKey];
  return {
    keyId: creator ?? `session:${ref.namespace}/${ref.name}`,
    namespaces: new Set([ref.namespace]),
    defaultNamespace: ref.namespace,
  };
}

function notFound(id: string): ProblemError {
  return new ProblemError('upstream-error', `The sandbox ${id} was not found`, {
    extensions: { e2b: 'sandbox-not-found' },
  });
}

/**
 * How long a call for a sandbox this replica has not seen waits for its watch: another replica may
 * have created it a moment ago. Never a read from the API server: these calls are not
 * authenticated yet, and must not be able to make the gateway send API requests.
 */
export const UNSEEN_SANDBOX_GRACE_MS = 1000;

async function cachedSession(store: SessionStore, ref: SandboxRef): Promise<SandboxSession | undefined> {
  const found = store.get(ref.namespace, ref.name);
  if (found || store.tombstone(ref.namespace, ref.name)) return found;
  await store.waitForChange(ref.namespace, ref.name, UNSEEN_SANDBOX_GRACE_MS);
  return store.get(ref.namespace, ref.name);
}

async function checkEnvd(request: FastifyRequest, opts: AuthBridgeOptions): Promise<EnvdCall> {
  const token = header(request, 'x-access-token');
  if (!token) throw new ProblemError('unauthorized', 'missing X-Access-Token (the sandbox access token)');
  const id = header(request, 'e2b-sandbox-id') ?? '';
  const ref = parseSandboxId(id);
  if (!ref || !opts.namespaces.includes(ref.namespace)) throw notFound(id.slice(0, 128));
  const session = await cachedSession(opts.store, ref);
  const uid = session?.metadata.uid;
  if (!session || !uid || session.metadata.deletionTimestamp) throw notFound(id);
  if (!opts.tokens.verify({ ...ref, uid }, token)) {
    throw new ProblemError('unauthorized', `the access token is not the one of sandbox ${id}`);
  }
  return {
    sandbox: ref,
    uid,
    user: basicUser(header(request, 'authorization')),
    principal: sessionPrincipal(session, ref),
  };
}

function bridgeEnvd(request: FastifyRequest, reply: FastifyReply, opts: AuthBridgeOptions): Promise<void> {
  return checkEnvd(request, opts).then((call) => {
    calls.set(request.raw, call);
    const ticket = opts.keys.issue(call.principal);
    reply.raw.once('close', ticket.release);
    request.headers.authorization = `Bearer ${ticket.credential}`;
  });
}

function bridgeApiKey(request: FastifyRequest): void {
  const key = header(request, 'x-api-key');
  if (key !== undefined && request.headers.authorization === undefined) {
    request.headers.authorization = `Bearer ${key}`;
  }
}

export default fp<AuthBridgeOptions>(
  (app: FastifyInstance, opts: AuthBridgeOptions, done: (err?: Error) => void) => {
    const envdPrefix = E2B_ENVD_PREFIX + '/';
    const apiPrefix = E2B_API_PREFIX + '/';
    app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, hookDone) => {
      // An unknown path under /e2b has no route: its key is still read, so it is answered 404.
      const url = request.routeOptions.url ?? request.url;
      if (!url.startsWith(apiPrefix)) return hookDone();
      if (!url.startsWith(envdPrefix)) {
        bridgeApiKey(request);
        return hookDone();
      }
      bridgeEnvd(request, reply, opts).then(() => hookDone(), hookDone);
    });
    done();
  },
  { name: 'e2b-auth-bridge', fastify: '5.x', dependencies: ['errors', 'services'] },
);
