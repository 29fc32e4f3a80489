/**
 * The SandboxSession event source, on @dot-i/k8s-operator: the only file that imports it.
 * dot-i is used for exactly one thing, its watch on the custom resource, and the handler does
 * nothing but reduce each event to a key and hand it to the per-key queue (dot-i runs handlers on
 * one global serial queue, so any real work here would serialize the whole operator).
 *
 * Traps handled here (see docs in operator/README.md):
 * - dot-i exits the process with code 1 on any watch error (connection refused or reset, any HTTP
 *   status but 200), and an in-stream ERROR event (410 Gone) kills it with an uncaught exception:
 *   every API server restart cost the operator a container restart. Its watchResource is
 *   overridden with a recovering watch (kube/recovering-watch.ts: backoff with jitter, capped at
 *   5 s; an ERROR event is a re-list), on client-node 1.4's Watch; the events keep dot-i's shape
 *   and reach the same handler (docs/adr/0022-operator-rides-out-api-server-loss.md).
 * - dot-i's stop() also ends in process.exit(1), so it is never called. On shutdown the source is
 *   closed: its watches are aborted and events are dropped from then on.
 * - each (re-)watch is made without a resourceVersion, as dot-i makes it, replaying every session
 *   as ADDED and never reporting deletions it missed: the periodic resync (kube/resync.ts) catches
 *   those.
 * - one Operator instance per watched namespace (kept from dot-i's own watch, whose abort handles
 *   are keyed by resource, `plural.apiVersion`, so a second namespace on one instance overwrote
 *   the first's).
 * - ESM: the CommonJS module.exports arrives as the default import; the class is `.default`.
 * - dot-i loads its own KubeConfig (client-node 0.20, loadFromDefault: $KUBECONFIG, ~/.kube/config,
 *   then in-cluster) in its constructor; the overriding watch uses a client-node 1.4 KubeConfig
 *   loaded from the same sources (or the one passed in), never dot-i's.
 */
import dotI, { type ResourceEvent } from '@dot-i/k8s-operator';
import * as k8s from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';

import { keyString } from '../controller/session-key.js';
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import { RecoveringWatch, type RecoveringWatchOptions } from './recovering-watch.js';
import type { WatchEventType } from '../state/session-change-filter.js';

const { default: Operator, ResourceMetaImpl } = dotI;

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
  /** The watches' KubeConfig (client-node 1.4); default: loadFromDefault, the sources dot-i reads. */
  readonly kc?: k8s.KubeConfig;
  /** Delays between failed watch attempts (default: recovering-watch.ts's WATCH_BACKOFF). */
  readonly backoff?: RecoveringWatchOptions['backoff'];
}

/** The running watches. */
export interface SessionWatch {
  /** Aborts the watches and drops every later event. Never stops dot-i itself (that exits with 1). */
  close(): void;
}

/** dot-i's watchResource parameters (one tuple: the signature is dot-i's, five positional). */
type WatchResourceArgs = [
  group: string,
  version: string,
  plural: string,
  onEvent: (event: ResourceEvent) => Promise<void>,
  namespace?: string,
];

class SessionWatchOperator extends Operator {
  closed = false;
  private watches: RecoveringWatch[] = [];

  constructor(
    private readonly opts: SessionWatchOptions,
    private readonly namespace: string,
    private readonly kc: k8s.KubeConfig,
  ) {
    super({
      debug: (message: string) => opts.logger.debug(message, { component: 'dot-i' }),
      info: (message: string) => opts.logger.info(message, { component: 'dot-i' }),
      warn: (message: string) => opts.logger.warn(message, { component: 'dot-i' }),
      error: (message: string) => opts.logger.error(message, { component: 'dot-i' }),
    });
  }

  close(): void {
    this.closed = true;
    for (const w of this.watches) w.close();
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

  /**
   * dot-i's watchResource without its process.exit(1): the same path, the same event shape, the
   * same handler, on a watch that re-watches after errors (kube/recovering-watch.ts). Handlers run
   * one at a time in stream order, as on dot-i's queue; a failed one is logged, not swallowed.
   */
  protected override async watchResource(
    ...[group, version, plural, onEvent, namespace]: WatchResourceArgs
  ): Promise<void> {
    const base = group ? `/apis/${group}/${version}/` : `/api/${version}/`; // as dot-i builds it
    const path = `${base}${namespace ? `namespaces/${namespace}/` : ''}${plural}`;
    const watch = new k8s.Watch(this.kc);
    let chain = Promise.resolve();
    const recovering = new RecoveringWatch({
      watch: (p, query, onLine, done) => watch.watch(p, query, onLine, done),
      path,
      logger: this.opts.logger,
      backoff: this.opts.backoff,
      onEvent: (type, object) => {
        const obj = object as k8s.KubernetesObject;
        // Throws on an object without name, resourceVersion, apiVersion or kind: logged and
        // dropped by the watch (dot-i threw it out of the stream's data callback).
        const event = { meta: ResourceMetaImpl.createWithPlural(plural, obj), object: obj, type };
        chain = chain
          .then(() => onEvent(event as ResourceEvent))
          .catch((err: unknown) =>
            this.opts.logger.error('session event handler failed', { type, ...errorFields(err) }),
          );
      },
    });
    this.watches.push(recovering);
    await recovering.start();
    this.logger.info(`watching resource ${plural}.${group}/${version}`);
  }
}

/** Starts the watches; resolves once every watch was accepted by the API server (or closed). */
export async function startSessionWatch(opts: SessionWatchOptions): Promise<SessionWatch> {
  const scopes = opts.namespaces.length > 0 ? opts.namespaces : [''];
  const kc = opts.kc ?? defaultKubeConfig();
  const operators = scopes.map((ns) => new SessionWatchOperator(opts, ns, kc));
  await Promise.all(operators.map((o) => o.start()));
  return {
    close: () => {
      for (const o of operators) o.close();
    },
  };
}

function defaultKubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault();
  return kc;
}
