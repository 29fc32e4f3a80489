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
 * - ESM: the CommonJS module.exports arrives as the default import; the class is `.default`.
 * - dot-i loads its own KubeConfig (client-node 0.20, loadFromDefault: $KUBECONFIG, ~/.kube/config,
 *   then in-cluster), the same sources our client-node 1.4 KubeConfig loads.
 */
import dotI from '@dot-i/k8s-operator';
import { GROUP, PLURAL, VERSION } from '@sandbox-platform/api';

import { keyString } from '../controller/session-key.js';
import type { Logger } from '../telemetry/log-port.js';
import type { SessionLike, WatchEventType } from './session-change-filter.js';

const Operator = dotI.default;

/** A session event, reduced to what the queue needs. */
export interface SessionWatchEvent {
  readonly type: WatchEventType;
  readonly key: string;
  readonly object: SessionLike;
}

/** Source parameters. */
export interface SessionWatchOptions {
  /** '' watches all namespaces. */
  readonly namespace: string;
  readonly onEvent: (event: SessionWatchEvent) => void;
  readonly logger: Logger;
}

/** A running watch. */
export interface SessionWatch {
  /** Drops every later event. Never stops dot-i itself (that would exit the process with 1). */
  close(): void;
}

class SessionWatchOperator extends Operator {
  closed = false;

  constructor(private readonly opts: SessionWatchOptions) {
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
            object: event.object,
          });
        }
        return Promise.resolve();
      },
      this.opts.namespace || undefined,
    );
  }
}

/** Starts the watch; resolves once the watch request was issued. */
export async function startSessionWatch(opts: SessionWatchOptions): Promise<SessionWatch> {
  const operator = new SessionWatchOperator(opts);
  await operator.start();
  return {
    close: () => {
      operator.closed = true;
    },
  };
}
