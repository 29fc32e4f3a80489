/**
 * The reconcile's working state and the phase contract. Phases run in order, each idempotent;
 * a phase reads and extends the scope (what earlier phases found or created), returns when to look
 * again, or throws. `halt` stops the remaining provisioning phases (the Pod never goes ahead
 * without its Secret) but the lifecycle phase still runs.
 */
import type { SandboxSession, SandboxSessionStatus } from '@sandbox-platform/api';

import type {
  ClaimStore,
  EventRecorder,
  PodStore,
  SecretStore,
  SessionStore,
  StorageClassLookup,
} from '../kube/ports.js';
import type { ClaimView, PodView, SecretView } from '../state/views.js';
import { hasPersistentWorkspace } from '../resources/workspace-claim.js';
import type { TenantSecretReader } from '../kube/tenant-secrets.js';
import type { PodBuildOptions } from '../resources/pod-options.js';
import type { SessionRef } from '../resources/metadata.js';
import type { Logger } from '../telemetry/log-port.js';
import type { PoolClaimer } from './claim-phase.js';
import type { Clock } from './clock.js';
import type { EnvProblem, EnvResolution } from './env-sources.js';
import type { ExpiryReason } from './lifecycle.js';
import type { ReconcileObserver } from './observer.js';
import type { SessionKey } from './session-key.js';
import type { StatusDeferral } from './status-deferral.js';
import type { Outcome, StatusInputs } from './status.js';
import type { PodLeaving, SuspendCause } from './suspension.js';
import type { WorkspaceState } from './workspace-state.js';
import type { RestoreRunner } from '../snapshot/restore-runner.js';
import type { WorkspaceVerdict } from '../snapshot/workspace-verdict.js';

/** Everything the controller needs from outside; the composition root builds it. */
export interface ControllerDeps {
  readonly sessions: SessionStore;
  readonly pods: PodStore;
  readonly secrets: SecretStore;
  /** Workspace PersistentVolumeClaims (sessions with spec.workspace.persistentVolumeClaim). */
  readonly claims: ClaimStore;
  /** Whether a workspace's StorageClass exists (asked only while its claim is unbound). */
  readonly storageClasses: StorageClassLookup;
  /**
   * How long a workspace claim may stay unbound (from its creation, or the session's resume)
   * before Ready says WorkspaceNotBound instead of WorkspacePending.
   */
  readonly workspaceBindTimeoutMs: number;
  readonly events: EventRecorder;
  /**
   * Reads the Secrets spec.env names (valueFrom.secretKeyRef), one GET each, only when a session
   * is about to get a Pod (env-sources.ts).
   */
  readonly tenantSecrets: TenantSecretReader;
  readonly clock: Clock;
  /** HMAC key of the session tokens (>= 32 bytes). Never logged, never leaves the operator. */
  readonly masterKey: Buffer;
  readonly podOptions: PodBuildOptions;
  /** Smallest requeue delay for a deadline, so rounding cannot spin the queue. */
  readonly requeueFloorMs: number;
  /**
   * Safety requeue while waiting for something a watch event normally announces (a previous
   * session's child being garbage-collected, a Pod being deleted).
   */
  readonly waitRequeueMs: number;
  readonly observer: ReconcileObserver;
  /**
   * Runs a phase inside a trace span named after it (telemetry/tracing.ts); undefined while
   * tracing is off, and the phases then run unwrapped.
   */
  readonly tracePhase?: <R>(name: string, run: () => Promise<R>) => Promise<R>;
  readonly logger: Logger;
  /**
   * Sessions queued or being reconciled besides this one. While there are any, a status write
   * that only reports progress waits (status-deferral.ts), so that in a burst every session's
   * Secret and Pod come first and the status writes follow.
   */
  readonly otherWork: () => number;
  readonly statusDeferral: StatusDeferral;
  /**
   * Warm pools (pool/claims.ts; docs/adr/0016): binds a new session to a warm Pod. Undefined:
   * every session is created cold.
   */
  readonly pools?: PoolClaimer;
  /**
   * Restores of spec.workspace.fromSnapshot (snapshot/restore-runner.ts, docs/snapshots.md).
   * Undefined: sessions naming a snapshot are never Ready.
   */
  readonly restores?: RestoreRunner;
}

/** What the reconcile of one session has learned so far. */
export interface Scope {
  readonly key: SessionKey;
  readonly ref: SessionRef;
  /** The session as last read (replaced by a fresh read before collecting). */
  session: SandboxSession;
  /**
   * The resourceVersion the next status write applies to: the session's as read, then each
   * write's answer. A write onto any other version is refused, so a stale read writes nothing.
   */
  resourceVersion: string;
  readonly now: Date;
  /** This reconcile created the Secret or the Pod. */
  created: boolean;
  /**
   * The Secret this reconcile created, while its Event is not recorded yet: the Pod's creation
   * (or a warm Pod's bind) names it in its own Event, one Event less per session in a burst;
   * otherwise the driver records CreatedSecret after the provisioning phases (secret-phase.ts).
   */
  secretCreated?: string;
  /** The session's own Secret, once ensured. */
  secret?: SecretView;
  /**
   * The session's own Pod, once ensured (may be failing or terminating); set by the claim phase
   * for a Pod bound from a pool (named after the pool, not the session).
   */
  pod?: PodView;
  /**
   * The Pod was bound from a pool: its agent accepted the session's bind, and it never mounts the
   * Secret, so Ready does not wait for the Secret (created in the same reconcile all the same).
   */
  warmBound?: boolean;
  /**
   * What a cold Pod of the session is built from when not the session itself: the session with
   * its pool's template as spec (claim-phase.ts), so a pooled session is the same sandbox warm or cold.
   */
  podSource?: SandboxSession;
  /** The session's own workspace claim, once ensured (persistent workspaces only). */
  claim?: ClaimView;
  /** What is wrong with the workspace claim while it is not bound. */
  workspace?: WorkspaceState;
  /** When the session was last resumed (suspension.ts), for the idle deadline and status. */
  resumeTime?: Date;
  /** Set when this reconcile suspended the session itself (shutdownPolicy Suspend). */
  suspendCause?: SuspendCause;
  /** Why a suspended session's Pod is still there (suspend-phase.ts): Ready says Suspending. */
  podLeaving?: PodLeaving;
  /** Why a child is missing while the reconcile waits. */
  waiting?: string;
  /** spec.env with its Secret values, resolved once, when a Pod is about to be claimed or created. */
  env?: EnvResolution;
  /** Why spec.env cannot be resolved (a Secret or key missing): nothing is created meanwhile. */
  envProblem?: EnvProblem;
  expiresAt?: Date;
  /** What the restore (or resume) phase found about /workspace (snapshot/workspace-verdict.ts). */
  workspaceVerdict?: WorkspaceVerdict;
  /** Set when the session is (being) collected with shutdownPolicy Retain. */
  collected?: ExpiryReason;
  /** The status a phase already wrote in this reconcile (the Retain collection commit). */
  writtenStatus?: SandboxSessionStatus;
  /** The session itself was deleted by this reconcile, or vanished. */
  deleted: boolean;
}

/** When to reconcile again, and whether to skip the remaining provisioning phases. */
export interface PhaseResult {
  readonly requeueAfterMs?: number;
  readonly halt?: boolean;
}

/** One step of the reconcile. */
export type Phase = (scope: Scope, deps: ControllerDeps) => Promise<PhaseResult>;

/** The earlier of two requeue requests. */
export function soonest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

/** The session's own Secret exists and is not being deleted. */
export function secretUsable(scope: Pick<Scope, 'secret'>): boolean {
  return scope.secret !== undefined && !scope.secret.metadata.deletionTimestamp;
}

/** The inputs of computeStatus from the scope. */
export function statusInputsOf(scope: Scope, outcome: Outcome): StatusInputs {
  return {
    session: scope.session,
    now: scope.now,
    secretReady: scope.warmBound === true || secretUsable(scope),
    persistent: hasPersistentWorkspace(scope.session),
    claim: scope.claim,
    workspace: scope.workspace,
    resumeTime: scope.resumeTime,
    suspendCause: scope.suspendCause,
    podLeaving: scope.podLeaving,
    pod: scope.pod,
    waiting: scope.waiting,
    envProblem: scope.envProblem,
    outcome,
    expiresAt: scope.expiresAt,
    workspaceVerdict: scope.workspaceVerdict,
  };
}
