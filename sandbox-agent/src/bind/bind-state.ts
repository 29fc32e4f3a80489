/**
 * The bind state of a warm Pod's agent (docs/adr/0016-warm-pools.md). A warm agent starts unbound:
 * it holds no token, so every authenticated route answers 401. It accepts exactly one bind: a
 * request signed with the operator's bind key (whose public half it was given), naming this very
 * Pod (namespace, name and UID), carrying the session token. From then on that token is the only
 * one it accepts, and every further bind is refused; nothing ever unbinds it.
 *
 * The accepted request is kept, signature and all, in a file of the Pod's own emptyDir, so that a
 * restarted agent container (restartPolicy Always) is bound again to the same session. On start
 * the file is verified like a fresh bind: a file changed by anyone without the operator's private
 * key (the sandbox's own user can write it) is refused, and the agent stays unbound, serving
 * nobody: tampering can only break the tamperer's own session.
 *
 * The bind also carries the session's env (Secret values resolved by the operator) and startup
 * command: they are handed to the session's start (onBound, session-start.ts) only once the bind
 * is accepted and kept. A refused bind, or one that could not be kept, leaves nothing behind: no
 * value is applied, written or logged. The kept file holds them (as it holds the token), readable
 * only by the session's own user, in memory, gone with the Pod.
 *
 * Every refusal is the same 401 to the caller (no oracle for which check failed); the agent logs
 * the cause, never the token nor any value.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import type { KeyObject } from 'node:crypto';

import {
  bindPayloadSchema,
  bindRequestSchema,
  bindVerifyKey,
  verifyBindSignature,
  type BindPayload,
  type BindRequest,
  type BindStatus,
} from '@sandbox-platform/api';
import { Ajv } from 'ajv';

import { errorMessage, type Logger } from '../log.js';
import type { BindConfig } from './bind-config.js';

const ajv = new Ajv({ strict: true, allErrors: false, coerceTypes: false });
/** Validates the shape of a bind request (the routes and the restore use it). */
export const isBindRequest = ajv.compile<BindRequest>(bindRequestSchema);
const validPayload = ajv.compile<BindPayload>(bindPayloadSchema);

/** Namespace, name and UID of a Pod or a session. */
export interface Identity {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** What the bind state needs. */
export interface BindStateOptions {
  /** The operator's bind verification key. */
  readonly verifyKey: KeyObject;
  /** This Pod, from the downward API. */
  readonly pod: Identity;
  /** Where the accepted bind is kept (an emptyDir of the Pod). */
  readonly stateFile: string;
  readonly logger: Logger;
  /**
   * Called once the agent is bound (a fresh bind, or one restored after a restart), with the
   * session's env and startup command: the session starts (session-start.ts). Not called for a
   * refused bind, nor one that could not be kept: nothing of it is applied then.
   */
  readonly onBound?: (bound: BoundSession) => void;
}

/** What a bind hands the session's start: never the token. */
export interface BoundSession {
  readonly session: Identity;
  /** spec.env, Secret references resolved by the operator (empty when none). */
  readonly env: readonly { readonly name: string; readonly value: string }[];
  /** spec.startup.command, when the session has one. */
  readonly startup?: string;
}

/** Why a bind was refused (logged; the caller only sees 401). */
export type BindRefusal = 'already-bound' | 'bad-signature' | 'malformed-payload' | 'other-pod';

/** A refused bind: 401 to the caller, the reason in the agent log. */
export class BindRefusedError extends Error {
  override readonly name = 'BindRefusedError';

  constructor(readonly reason: BindRefusal) {
    super(`bind refused: ${reason}`);
  }
}

/** The bound session and its token, once bound. */
interface Bound extends BoundSession {
  readonly token: string;
}

/** One agent's bind state. */
export class BindState {
  /**
   * Set in the same synchronous run as the check and the write (`bind` never yields), so a second
   * bind arriving at the same time finds it set and is refused as already bound.
   */
  private bound?: Bound;

  constructor(private readonly opts: BindStateOptions) {}

  /** The token to accept, once bound; undefined before (nothing is accepted then). */
  token(): string | undefined {
    return this.bound?.token;
  }

  /** The session served, once bound. */
  status(): BindStatus | undefined {
    return this.bound && { bound: true, session: this.bound.session };
  }

  /**
   * Accepts the first valid bind; throws BindRefusedError for anything else (and for every bind
   * after the first). The request is kept on disk before the token is accepted: an agent that
   * could not keep it stays unbound (the operator then discards the Pod).
   */
  bind(request: BindRequest): BindStatus {
    const started = performance.now();
    if (this.bound) throw this.refuse('already-bound');
    const bound = this.check(request);
    try {
      this.keep(request);
    } catch (err) {
      throw new Error(`cannot keep the bind state ${this.opts.stateFile}`, { cause: err });
    }
    this.bound = bound;
    this.opts.logger.info('bound to a session', {
      namespace: bound.session.namespace,
      session: bound.session.name,
      // Counts only: the names and values of the env are never logged.
      env: bound.env.length,
      startup: bound.startup !== undefined,
      // The check and the write, for the claim's latency (docs/adr/0016, "Claim latency").
      durationMs: Math.round((performance.now() - started) * 100) / 100,
    });
    this.started(bound);
    return { bound: true, session: bound.session };
  }

  /**
   * Restores the bind an earlier run of the agent in this Pod accepted. No file: unbound. A file
   * that does not verify: unbound, with an error line (it was changed by someone without the key).
   */
  async restore(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.opts.stateFile, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new Error(`cannot read the bind state ${this.opts.stateFile}`, { cause: err });
    }
    try {
      const request = JSON.parse(text) as unknown;
      if (!isBindRequest(request)) throw new BindRefusedError('malformed-payload');
      this.bound = this.check(request);
      this.opts.logger.info('restored the bind of an earlier run', {
        namespace: this.bound.session.namespace,
        session: this.bound.session.name,
      });
    } catch (err) {
      this.opts.logger.error('the bind state does not verify; staying unbound', {
        file: this.opts.stateFile,
        error: err instanceof BindRefusedError ? err.reason : errorMessage(err),
      });
      return;
    }
    this.started(this.bound);
  }

  /** Verifies the signature, then the payload's shape and the Pod it names. */
  private check(request: BindRequest): Bound {
    if (!verifyBindSignature(this.opts.verifyKey, request)) throw this.refuse('bad-signature');
    let payload: unknown;
    try {
      payload = JSON.parse(request.payload);
    } catch {
      throw this.refuse('malformed-payload');
    }
    if (!validPayload(payload)) throw this.refuse('malformed-payload');
    const { pod } = this.opts;
    if (
      payload.pod.namespace !== pod.namespace ||
      payload.pod.name !== pod.name ||
      payload.pod.uid !== pod.uid
    )
      throw this.refuse('other-pod');
    const { namespace, name, uid } = payload.session;
    const env = (payload.env ?? []).map(({ name: n, value }) => ({ name: n, value }));
    const bound: Bound = { token: payload.token, session: { namespace, name, uid }, env };
    return payload.startup ? { ...bound, startup: payload.startup.command } : bound;
  }

  /** Hands the bound session to its start (session-start.ts); a failure there never unbinds. */
  private started(bound: Bound): void {
    try {
      this.opts.onBound?.({ session: bound.session, env: bound.env, startup: bound.startup });
    } catch (err) {
      this.opts.logger.error('cannot start the bound session', { error: errorMessage(err) });
    }
  }

  private refuse(reason: BindRefusal): BindRefusedError {
    this.opts.logger.warn('bind refused', { reason });
    return new BindRefusedError(reason);
  }

  /**
   * Runs the checks a bind makes once on a request that fails them, so that their first-call costs
   * (the Ed25519 verifier's setup, compiling the validators' and this module's code) are paid when
   * the warm agent starts, not in the claim a session waits for. Verifies nothing, changes nothing:
   * the all-zero signature of an empty payload never verifies.
   */
  warmUp(): void {
    const probe: BindRequest = { payload: '{}', signature: `${'A'.repeat(86)}==` };
    isBindRequest(probe);
    verifyBindSignature(this.opts.verifyKey, probe);
    validPayload(JSON.parse(probe.payload));
  }

  /**
   * Writes the request next to the state file, then renames it into place (all or nothing). Done
   * with the synchronous calls on purpose: a few hundred bytes into the Pod's own emptyDir, once in
   * the Pod's life, block the event loop for well under a millisecond, where the promise calls take
   * four trips through libuv's thread pool (open, write, close, rename), each a thread wake-up that
   * costs milliseconds on a busy node, all inside the claim. Neither version fsyncs: the file has to
   * outlive the agent container (a restart in the same Pod, same node, same page cache), not the
   * node, whose loss ends the Pod and its emptyDir anyway (docs/adr/0016-warm-pools.md).
   */
  private keep(request: BindRequest): void {
    const temp = `${this.opts.stateFile}.tmp`;
    writeFileSync(temp, JSON.stringify(request), { mode: 0o600 });
    renameSync(temp, this.opts.stateFile);
  }
}

/**
 * The bind state of a warm Pod's agent, restored from an earlier run's file if there is one
 * (`onBound` then runs at once: the restarted agent starts its session again).
 */
export async function openBindState(
  config: BindConfig,
  logger: Logger,
  onBound?: (bound: BoundSession) => void,
): Promise<BindState> {
  const state = new BindState({
    verifyKey: bindVerifyKey(config.key),
    pod: config.pod,
    stateFile: config.stateFile,
    logger,
    onBound,
  });
  await state.restore();
  if (!state.status()) state.warmUp();
  return state;
}
