/**
 * The default RuntimeClass (SANDBOX_DEFAULT_RUNTIME_CLASS_NAME, e.g. gvisor) applies only where it
 * exists (issue 25: "where the gVisor RuntimeClass exists, sessions and pools run under it"). A Pod
 * naming a RuntimeClass the cluster lacks is refused by the API server, so sessions would never
 * start; a cluster without gVisor should still run sessions, on the node's default runtime, and
 * say so. The operator reads the RuntimeClass (GET node.k8s.io/v1 runtimeclasses/<name>) at start
 * and every RUNTIME_CLASS_CHECK_MS after:
 *
 *   - found:      Pods whose spec (or pool template) names no runtime get the default;
 *   - not found:  they get no runtimeClassName (the node's default runtime);
 *   - cannot tell (the read was refused or failed, e.g. no `get runtimeclasses` permission): the
 *                 last verdict stands, and before any verdict the default is used. A failing read
 *                 never downgrades the runtime of new sandboxes; at worst their Pods are refused
 *                 as before, with the API server's message.
 *
 * Every change of verdict is logged once (a warning when the default stops applying) and shown by
 * the gauge `sandbox_operator_default_runtime_class_available` (0 also when no default is set). An
 * explicit spec.runtimeClassName is used as given, whether or not it exists: admission policy
 * decides whether it is allowed.
 */
import type * as k8s from '@kubernetes/client-node';

import type { PodBuildOptions } from '../resources/pod-options.js';
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import { isNotFound } from './errors.js';
import type { RuntimeClassLookup } from './ports.js';

/** How often the default RuntimeClass is looked up again. */
export const RUNTIME_CLASS_CHECK_MS = 60_000;

/** The lookup on the API server: true, false (404); any other failure rejects. */
export function createRuntimeClassLookup(node: k8s.NodeV1Api): RuntimeClassLookup {
  return {
    exists: async (name) => {
      try {
        await node.readRuntimeClass({ name });
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw new Error(`read RuntimeClass ${name}`, { cause: err });
      }
    },
  };
}

/** Settings of {@link DefaultRuntimeClass}. */
export interface DefaultRuntimeClassOptions {
  /** SANDBOX_DEFAULT_RUNTIME_CLASS_NAME; undefined: none configured (nothing is looked up). */
  readonly name?: string;
  readonly lookup: RuntimeClassLookup;
  readonly logger: Logger;
  /** Told whether the default applies, at start and on every change (the gauge). */
  readonly onChange?: (available: boolean) => void;
  /** Period of the lookups; default RUNTIME_CLASS_CHECK_MS. */
  readonly intervalMs?: number;
}

/** The default RuntimeClass as it applies now, looked up periodically. */
export class DefaultRuntimeClass {
  /** Before any verdict: the configured default applies (a failing read never downgrades). */
  private available: boolean;
  private verdictSeen = false;
  private failing = false;
  private timer?: NodeJS.Timeout;

  constructor(private readonly opts: DefaultRuntimeClassOptions) {
    this.available = opts.name !== undefined;
    opts.onChange?.(this.available);
  }

  /** The RuntimeClass Pods without one of their own get now; undefined: the node's default runtime. */
  current(): string | undefined {
    return this.available ? this.opts.name : undefined;
  }

  /** Looks the RuntimeClass up once; never throws. */
  async refresh(): Promise<void> {
    const name = this.opts.name;
    if (name === undefined) return;
    let exists: boolean;
    try {
      exists = await this.opts.lookup.exists(name);
    } catch (err) {
      // Logged once per streak of failures (a missing permission fails every minute).
      if (!this.failing)
        this.opts.logger.warn(
          'cannot tell whether the default RuntimeClass exists; keeping the last verdict',
          {
            runtimeClass: name,
            applied: this.available,
            ...errorFields(err),
          },
        );
      this.failing = true;
      return;
    }
    if (this.failing)
      this.opts.logger.info('the default RuntimeClass can be looked up again', { runtimeClass: name });
    this.failing = false;
    const changed = exists !== this.available || !this.verdictSeen;
    this.verdictSeen = true;
    if (!changed) return;
    const wasAvailable = this.available;
    this.available = exists;
    if (exists !== wasAvailable) this.opts.onChange?.(exists);
    if (exists)
      this.opts.logger.info('the default RuntimeClass exists; sandbox Pods without one of their own use it', {
        runtimeClass: name,
      });
    else
      this.opts.logger.warn(
        "the default RuntimeClass does not exist; sandbox Pods without one of their own get the node's default runtime",
        { runtimeClass: name },
      );
  }

  /** Looks up once (resolves after that first verdict), then every intervalMs. */
  async start(): Promise<void> {
    if (this.opts.name === undefined || this.timer) return;
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.opts.intervalMs ?? RUNTIME_CLASS_CHECK_MS);
    this.timer.unref();
  }

  /** Stops the periodic lookups. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * The Pod build options with `defaultRuntimeClassName` read from this check at every build
   * (the configured name while it applies, else undefined).
   */
  podOptions(base: Omit<PodBuildOptions, 'defaultRuntimeClassName'>): PodBuildOptions {
    const current = (): string | undefined => this.current();
    return Object.defineProperty({ ...base }, 'defaultRuntimeClassName', {
      get: current,
      enumerable: true,
    });
  }
}
