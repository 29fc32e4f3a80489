/**
 * The SandboxPool vocabulary (warm pools, docs/adr/0016-warm-pools.md): kind, labels, annotations,
 * condition types, reasons and the agent settings of a warm Pod. The operator, the gateway and the
 * tests import these; nothing spells them by hand.
 */

/** Kind of the pool resource. */
export const POOL_KIND = 'SandboxPool';
/** Plural resource name of pools, as in URLs and RBAC rules. */
export const POOL_PLURAL = 'sandboxpools';

/**
 * Longest pool name: a warm Pod is named `<pool>-<10 random characters>`, and Pod names are also
 * hostnames (at most 63 characters). A CEL rule of the CRD enforces it.
 */
export const POOL_NAME_MAX = 52;

/** Length of the random suffix of a warm Pod's name (base 36, about 51 bits). */
export const POOL_POD_SUFFIX_LENGTH = 10;

export const POOL_LABELS = {
  /**
   * On every Pod a pool creates: the pool's name. Kept when the Pod is bound to a session (it says
   * where the Pod came from); the pool's own informer selects on it.
   */
  pool: 'sandbox.dev/pool',
} as const;

export const POOL_ANNOTATIONS = {
  /**
   * On every warm Pod: a hash of the Pod it was built as (the pool's template, the operator's
   * defaults and the bind verification key). A warm Pod whose hash differs from the pool's current
   * one is outdated: it is never bound, and the pool replaces it.
   */
  templateHash: 'sandbox.dev/pool-template-hash',
} as const;

/** Condition types of a SandboxPool. */
export const POOL_CONDITIONS = {
  /** True when the pool holds spec.replicas available warm Pods (it is full). */
  ready: 'Ready',
  /** True when at least spec.minReady warm Pods are available to be bound. */
  available: 'Available',
} as const;

/** Reasons of the pool conditions. */
export const POOL_REASONS = {
  /** Ready=True: every warm Pod the pool wants is available. */
  full: 'PoolFull',
  /** Ready=False: warm Pods are being created or are starting (the message counts them). */
  filling: 'Filling',
  /** Available=True: at least minReady warm Pods are available. */
  enough: 'MinReady',
  /** Available=False: fewer than minReady warm Pods are available. */
  notEnough: 'BelowMinReady',
  /**
   * Ready=False: warm Pods cannot start (image pull failure, crash loop, unschedulable); the
   * message carries the first Pod's reason. Sessions of the pool are created cold meanwhile.
   */
  podsFailing: 'PodsFailing',
  /** Ready=False: a ResourceQuota of the namespace refused a warm Pod (the message names it). */
  quotaExceeded: 'QuotaExceeded',
  /** Ready=False: the operator failed to reconcile the pool; details are in the operator log. */
  reconcileError: 'ReconcileError',
} as const;

/**
 * Reasons of the Events the operator records about pools: on the SandboxSession for a claim, on the
 * SandboxPool for its Pods.
 */
export const POOL_EVENT_REASONS = {
  /** Normal, on the session: a warm Pod of the pool was bound to it (the note names both). */
  boundFromPool: 'BoundFromPool',
  /** Normal, on the session: the pool had no available warm Pod; the Pod is created cold. */
  poolEmpty: 'PoolEmpty',
  /** Warning, on the session: spec.poolRef names a pool that does not exist; created cold. */
  poolNotFound: 'PoolNotFound',
  /**
   * Warning, on the session: binding a claimed warm Pod failed (the agent refused or did not
   * answer); the Pod is deleted and the session tries another or is created cold.
   */
  bindFailed: 'BindFailed',
} as const;

/**
 * Environment of a warm Pod's agent. All `SANDBOX_AGENT_*`: the agent removes them from the
 * environment of the user's shell. None of them is secret.
 */
export const BIND_ENV = {
  /**
   * The operator's bind verification key (Ed25519 public key, 64 hex characters). Its presence
   * makes the agent start unbound: it accepts no token until one signed bind.
   */
  key: 'SANDBOX_AGENT_BIND_KEY',
  /** The Pod's own name (downward API); a bind must name it. */
  podName: 'SANDBOX_AGENT_POD_NAME',
  /** The Pod's own UID (downward API); a bind must name it. */
  podUID: 'SANDBOX_AGENT_POD_UID',
  /** The Pod's namespace (downward API); a bind must name it. */
  podNamespace: 'SANDBOX_AGENT_POD_NAMESPACE',
  /** Where the agent keeps the accepted bind, so that a restarted agent stays bound. */
  stateFile: 'SANDBOX_AGENT_BIND_STATE',
} as const;

/**
 * Default path of the bind state file: an emptyDir of the warm Pod (it lives as long as the Pod,
 * so a restarted agent container finds it).
 */
export const BIND_STATE_FILE = '/var/run/sandbox/bind.json';
