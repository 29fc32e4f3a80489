/** Small fakes: clock, logger, observer, and controller deps over a FakeCluster. */
import type { Clock } from '../../src/controller/clock.js';
import type { ExpiryReason } from '../../src/controller/lifecycle.js';
import type { ReconcileObserver, ShutdownPolicy } from '../../src/controller/observer.js';
import type { ControllerDeps } from '../../src/controller/scope.js';
import { StatusDeferral } from '../../src/controller/status-deferral.js';
import type { LogFields, Logger } from '../../src/telemetry/log-port.js';
import type { FakeCluster } from './fake-cluster.js';

/** A clock tests move by hand. */
export class FakeClock implements Clock {
  constructor(private ms: number) {}
  now(): Date {
    return new Date(this.ms);
  }
  set(iso: string): void {
    this.ms = Date.parse(iso);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** A logger that keeps lines for assertions. */
export class MemoryLogger implements Logger {
  readonly lines: Array<{ level: string; message: string; fields?: LogFields }> = [];
  error(message: string, fields?: LogFields): void {
    this.lines.push({ level: 'error', message, fields });
  }
  warn(message: string, fields?: LogFields): void {
    this.lines.push({ level: 'warn', message, fields });
  }
  info(message: string, fields?: LogFields): void {
    this.lines.push({ level: 'info', message, fields });
  }
  debug(message: string, fields?: LogFields): void {
    this.lines.push({ level: 'debug', message, fields });
  }
}

/** An observer that keeps what it saw. */
export class MemoryObserver implements ReconcileObserver {
  readonly reasons = new Map<string, string>();
  readonly firstReadySeconds: number[] = [];
  readonly collections: Array<{ reason: ExpiryReason; policy: string; secondsPastDeadline: number }> = [];
  readyReason(key: string, reason: string | undefined): void {
    if (reason === undefined) this.reasons.delete(key);
    else this.reasons.set(key, reason);
  }
  readonly statusWrites: string[] = [];
  statusWritten(reason: string | undefined): void {
    this.statusWrites.push(reason ?? '');
  }
  firstReady(seconds: number): void {
    this.firstReadySeconds.push(seconds);
  }
  collected(reason: ExpiryReason, policy: ShutdownPolicy, secondsPastDeadline: number): void {
    this.collections.push({ reason, policy, secondsPastDeadline });
  }
}

/** The 32-byte master key of the tests. */
export const MASTER_KEY = Buffer.alloc(32, 7);

/** Controller deps over a fake cluster. */
export function controllerDeps(
  cluster: FakeCluster,
  clock: FakeClock,
): ControllerDeps & { logger: MemoryLogger; observer: MemoryObserver } {
  return {
    sessions: cluster.sessionStore(),
    pods: cluster.podStore(),
    secrets: cluster.secretStore(),
    claims: cluster.claimStore(),
    storageClasses: cluster.storageClassLookup(),
    tenantSecrets: cluster.tenantSecretReader(),
    workspaceBindTimeoutMs: 60_000,
    events: cluster.eventRecorder(),
    clock,
    masterKey: MASTER_KEY,
    podOptions: {
      defaultImage: 'localhost/sandbox-platform/sandbox-agent:dev',
      defaultResources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
      defaultWorkspaceSize: '1Gi',
      tmpSize: '64Mi',
      runAsUser: 1000,
      terminationGracePeriodSeconds: 10,
    },
    requeueFloorMs: 250,
    waitRequeueMs: 5000,
    observer: new MemoryObserver(),
    logger: new MemoryLogger(),
    otherWork: () => 0,
    statusDeferral: new StatusDeferral(),
  };
}
