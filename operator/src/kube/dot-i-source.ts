/**
 * The SandboxSession event source, on @dot-i/k8s-operator: the only file that imports it.
 * dot-i is used for exactly one thing, its watch on the custom resource, and the handler does
 * nothing but reduce each event to a key and hand it to the per-key queue (dot-i runs handlers on
 * one global serial queue, so any real work here would serialize the whole operator).
 *
 * Traps handled here (see docs in operator/README.md):
 * - dot-i exits the process with code 1 on any watch error. That is accepted (crash-only: state
 *   lives in the API server, the standby replica or a restart takes over), and startup is fast.
 * - dot-i's stop() also ends in process.exit(1), so it is never called. On shutdown the source is
 *   closed (events are dropped from then on) and the process exits on its own with code 0, which
 *   closes the watch connection with it.
 * - dot-i re-watches without a resourceVersion, replaying every session as ADDED and never
 *   reporting deletions it missed: the periodic resync (kube/resync.ts) catches those.
 * - one Operator instance per watched namespace: dot-i keys its abort handles by resource
 *   (`plural.apiVersion`), so a second watchResource for another namespace on the same instance
 *   would overwrite the first's handle. Separate instances keep each watch whole; since stop() is
 *   never called (see above), shutdown is the same for one namespace or many.
 * - ESM: the CommonJS module.exports arrives as the default import; the class is `.default`.
 * - dot-i loads its own KubeConfig (client-node 0.20, loadFromDefault: $KUBECONFIG, ~/.kube/config,
 *   then in-cluster), the same sources our client-node 1.4 KubeConfig loads.
 */
import dotI from '@dot-i/k8s-operator';
import { GROUP, PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';

import { keyString } from '../controller/session-key.js';
import type { Logger } from '../telemetry/log-port.js';
import type { WatchEventType } from './session-change-filter.js';

const Operator = dotI.default;

/** A session event, reduced to what the queue needs. */
export interface SessionWatchEvent {
  readonly type: WatchEventType;
  readonly key: string;
  /** The object as the API server sent it (a SandboxSession: the watch is on that resource). */
  readonly object: SandboxSession;
}

/** Source parameters. */
export interface SessionWatchOptions {
  /** The namespaces to watch, one watch each; empty: one watch on all namespaces. */
  readonly namespaces: readonly string[];
  readonly onEvent: (event: SessionWatchEvent) => void;
  readonly logger: Logger;
}

/** The running watches. */
export interface SessionWatch {
  /** Drops every later event. Never stops dot-i itself (that would exit the process with 1). */
  close(): void;
}

class SessionWatchOperator extends Operator {
  closed = false;

  constructor(
    private readonly opts: SessionWatchOptions,
    private readonly namespace: string,
  ) {
    super({
      debug: (message: string) => opts.logger.debug(message, { component: 'dot-i' }),
      info: (message: string) => opts.logger.info(message, { component: 'dot-i' }),
      warn: (message: string) => opts.logger.warn(message, { component: 'dot-i' }),
      error: (message: string) => opts.logger.error(message, { component: 'dot-i' }),
    });
  }

  protected async init(): Promise<void> {
    await this.watchResource(
      GROUP,
      VERSION,
      PLURAL,
      (event) => {
        if (this.closed) return Promise.resolve();
        const { name, namespace } = event.meta;
        if (namespace && name) {
          this.opts.onEvent({
            type: event.type,
            key: keyString({ namespace, name }),
            object: event.object as SandboxSession,
          });
        }
        return Promise.resolve();
      },
      this.namespace || undefined,
    );
  }
}

/** Starts the watches; resolves once every watch request was issued. */
export async function startSessionWatch(opts: SessionWatchOptions): Promise<SessionWatch> {
  const scopes = opts.namespaces.length > 0 ? opts.namespaces : [''];
  const operators = scopes.map((ns) => new SessionWatchOperator(opts, ns));
  await Promise.all(operators.map((o) => o.start()));
  return {
    close: () => {
      for (const o of operators) o.closed = true;
    },
  };
}
