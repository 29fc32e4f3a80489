/**
 * `POST /v1/bind` (signed, no bearer) and `GET /v1/bind` (bearer: the session token) of a warm
 * Pod's agent (docs/adr/0016-warm-pools.md). An agent started with a token (a Pod created for its
 * session) has no bind state: both answer 404, as for any unknown route.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { MAX_BIND_BODY_BYTES } from '@sandbox-platform/api';

import { readJson } from '../http/body.js';
import { HttpProblem, sendJson } from '../http/problem.js';
import { validated } from '../http/validate.js';
import { BindRefusedError, isBindRequest, type BindState } from './bind-state.js';

/**
 * Largest bind body read: the wire contract's bound (the payload carries the session's env and
 * startup command; the operator never sends more).
 */
export const BIND_BODY_MAX_BYTES = MAX_BIND_BODY_BYTES;

/** The token every bearer-authenticated route accepts now: the bound session's, or the agent's own. */
export function currentToken(deps: { token: string; bind?: BindState }): string {
  return deps.bind ? (deps.bind.token() ?? '') : deps.token;
}

/** `POST /v1/bind`: the one bind; 401 for every refusal. */
export async function postBindRoute(
  req: IncomingMessage,
  res: ServerResponse,
  bind: BindState | undefined,
): Promise<void> {
  if (!bind) throw new HttpProblem('not-found', 'this agent serves the session it was started for');
  const request = validated(isBindRequest, await readJson(req, BIND_BODY_MAX_BYTES));
  try {
    sendJson(res, 200, bind.bind(request));
  } catch (err) {
    if (err instanceof BindRefusedError) throw new HttpProblem('unauthorized', 'the bind is refused');
    throw err;
  }
}

/** `GET /v1/bind` (authenticated with the session token by the server): the session served. */
export function getBindRoute(
  _req: IncomingMessage,
  res: ServerResponse,
  bind: BindState | undefined,
): Promise<void> {
  const status = bind?.status();
  if (!status) return Promise.reject(new HttpProblem('not-found', 'this agent was not bound'));
  sendJson(res, 200, status);
  return Promise.resolve();
}
