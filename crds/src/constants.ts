/**
 * The SandboxSession API vocabulary: one module, one doc comment per constant. The operator, the
 * gateway and the tests import these; nothing spells a label, annotation or reason by hand.
 */

/** API group of SandboxSession. */
export const GROUP = 'sandbox.dev';
/** The only served (and storage) version. */
export const VERSION = 'v1alpha1';
/** apiVersion string of objects of this API. */
export const API_VERSION = `${GROUP}/${VERSION}`;
/** Kind of the custom resource. */
export const KIND = 'SandboxSession';
/** Plural resource name, as used in URLs and RBAC rules. */
export const PLURAL = 'sandboxsessions';

/** Label value of app.kubernetes.io/managed-by on every child the operator creates. */
export const MANAGER_NAME = 'sandbox-operator';

export const LABELS = {
  /** Set on every child to MANAGER_NAME; informers select on it. */
  managedBy: 'app.kubernetes.io/managed-by',
  /** Set on every child to the session name (or its hash when the name is no valid label value). */
  session: 'sandbox.dev/session',
  /** Set on the sandbox Pod; NetworkPolicies select sandbox pods with it. */
  component: 'app.kubernetes.io/component',
} as const;

/** Value of LABELS.component on sandbox Pods. */
export const SANDBOX_COMPONENT = 'sandbox';

export const ANNOTATIONS = {
  /**
   * RFC 3339 time of the last exec or file call, written by the gateway: at most once per
   * throttle interval per session, again at the end of a call, and as a heartbeat while an exec
   * is still running, so a session in use is never idle-collected. The operator mirrors it into
   * status.lastActivityTime and computes the idle deadline from it.
   */
  lastActivity: 'sandbox.dev/last-activity',
  /** On the Secret: the session UID the token was derived from. */
  sessionUID: 'sandbox.dev/session-uid',
  /**
   * Id of the API key that created the session through the gateway (key ids are safe to log;
   * never the key). The gateway counts a key's sessions by it (GATEWAY_MAX_SESSIONS_PER_KEY).
   */
  createdByKey: 'sandbox.dev/created-by-key',
} as const;

/** Condition types. There is deliberately no Running condition: running is desired state. */
export const CONDITIONS = {
  /**
   * True only when the Pod is Running, PodReady and has an IP, and the token Secret exists (a Pod
   * created for the session mounts it) or the Pod is a warm Pod whose agent accepted the session's
   * bind (it never mounts the Secret, which is created alongside: docs/adr/0016).
   */
  ready: 'Ready',
  /** Mirrors the Pod's PodScheduled condition; absent while there is no Pod. */
  podScheduled: 'PodScheduled',
} as const;

/** Stable reasons of the Ready condition. Clients may switch on these. */
export const REASONS = {
  /** Ready=True: the Pod is Running and Ready with an IP, and the Secret exists. */
  ready: 'SandboxReady',
  /** The Secret or Pod is being created. */
  creating: 'Creating',
  /** The Pod exists but is not Ready yet (image starting, probe not passing). */
  podPending: 'PodPending',
  /** The scheduler cannot place the Pod. */
  unschedulable: 'Unschedulable',
  /** The image cannot be pulled (ErrImagePull, ImagePullBackOff, ErrImageNeverPull, InvalidImageName). */
  imagePullFailed: 'ImagePullFailed',
  /** The Pod failed or its container keeps crashing. */
  podFailed: 'PodFailed',
  /** The session was idle for spec.idleTimeoutSeconds (shutdownPolicy Retain). */
  idleTimeout: 'IdleTimeout',
  /** The session outlived spec.maxLifetimeSeconds (shutdownPolicy Retain). */
  lifetimeExceeded: 'LifetimeExceeded',
  /** A Pod or Secret with the deterministic name exists but is not owned by this session. */
  nameConflict: 'NameConflict',
  /** The operator failed to reconcile; the message is generic, details are in the operator log. */
  reconcileError: 'ReconcileError',
  /**
   * A ResourceQuota of the namespace refused the Pod or Secret (over a limit, or the Pod lacks a
   * request or limit the quota constrains); the message is the API server's, naming the quota.
   * Retried with backoff: the session provisions once the quota has room.
   */
  quotaExceeded: 'QuotaExceeded',
  /** The session is being deleted. */
  terminating: 'Terminating',
  /**
   * spec.suspend is true (set by a client, or by the operator when shutdownPolicy Suspend found
   * the session idle): the Pod is deleted (or being deleted); the Secret and the workspace are
   * kept. spec.suspend=false, or any exec, file or MCP call through the gateway, resumes it.
   */
  suspended: 'Suspended',
  /**
   * spec.suspend is true and the session's Pod is still there: a persistent workspace's digest is
   * being recorded for verified resume (up to a minute), or the Pod is being deleted. Becomes
   * Suspended once the Pod is gone; resuming meanwhile works as from Suspended.
   */
  suspending: 'Suspending',
  /**
   * spec.workspace.persistentVolumeClaim.storageClassName names a StorageClass that does not
   * exist: the claim can never be provisioned. Fix the session (delete and re-create it).
   */
  storageClassNotFound: 'StorageClassNotFound',
  /** The workspace PersistentVolumeClaim is not bound yet (being provisioned). */
  workspacePending: 'WorkspacePending',
  /**
   * The workspace PersistentVolumeClaim stayed unbound longer than the operator's
   * WORKSPACE_BIND_TIMEOUT_SECONDS (no provisioner for its class, no default StorageClass, no
   * matching volume); the message names the claim and its class. The session provisions as soon
   * as the claim binds.
   */
  workspaceNotBound: 'WorkspaceNotBound',
  /**
   * An entry of spec.env names a Secret, or a key of a Secret, that does not exist in the
   * session's namespace; the message names the Secret and key (never a value). Nothing is created
   * or claimed meanwhile; the operator looks again every few seconds, so the session provisions
   * once the Secret has the key.
   */
  secretNotFound: 'SecretNotFound',
  /**
   * A value read from a Secret for spec.env cannot be exported: the values read from Secrets
   * exceed SECRET_ENV_MAX_TOTAL_BYTES together, or one is not UTF-8 text or holds a NUL byte. The
   * message names the Secret and key (never a value). Looked at again like SecretNotFound.
   */
  secretValueInvalid: 'SecretValueInvalid',
} as const;

export type ReadyReason = (typeof REASONS)[keyof typeof REASONS];

/**
 * Reasons of the Kubernetes Events the operator records on a SandboxSession (events.k8s.io/v1).
 * `kubectl describe sandboxsession NAME` lists them; alerting may match on them.
 */
export const EVENT_REASONS = {
  /** Normal: the token Secret was created. */
  createdSecret: 'CreatedSecret',
  /** Normal: the sandbox Pod was created (first time, or again after it was deleted or failed). */
  createdPod: 'CreatedPod',
  /** Normal: the session became Ready. */
  ready: 'Ready',
  /** Warning: the session was Ready and no longer is (the note carries the Ready reason). */
  notReady: 'NotReady',
  /** Normal: the session was collected after spec.idleTimeoutSeconds without activity. */
  idleTimeout: REASONS.idleTimeout,
  /** Normal: the session was collected after spec.maxLifetimeSeconds. */
  lifetimeExceeded: REASONS.lifetimeExceeded,
  /** Warning: a Pod or Secret with the session's child name is not owned by it (never adopted). */
  nameConflict: REASONS.nameConflict,
  /** Warning: reconciling failed; details are in the operator log. */
  reconcileError: REASONS.reconcileError,
  /** Warning: a ResourceQuota refused the session's Pod or Secret (the note names the quota). */
  quotaExceeded: REASONS.quotaExceeded,
  /** Warning: the Pod cannot be scheduled. */
  unschedulable: REASONS.unschedulable,
  /** Warning: the image cannot be pulled. */
  imagePullFailed: REASONS.imagePullFailed,
  /** Warning: the Pod failed (it is deleted and created again) or its container keeps crashing. */
  podFailed: REASONS.podFailed,
  /** Normal: the workspace PersistentVolumeClaim was created. */
  createdWorkspace: 'CreatedWorkspace',
  /** Normal: the session was suspended (its Pod deleted; the note says whether idle or asked). */
  suspended: REASONS.suspended,
  /** Normal: a suspended session was resumed (its Pod is created again on the same workspace). */
  resumed: 'Resumed',
  /** Warning: the workspace names a StorageClass that does not exist. */
  storageClassNotFound: REASONS.storageClassNotFound,
  /** Warning: the workspace claim stayed unbound past the operator's bind timeout. */
  workspaceNotBound: REASONS.workspaceNotBound,
  /** Warning: a Secret (or key) that spec.env references does not exist in the namespace. */
  secretNotFound: REASONS.secretNotFound,
  /** Warning: a value spec.env reads from a Secret cannot be exported (too large, not text). */
  secretValueInvalid: REASONS.secretValueInvalid,
} as const;

/** Summary phase for the printer column only (derived from the conditions). */
export const PHASES = {
  pending: 'Pending',
  ready: 'Ready',
  suspended: 'Suspended',
  terminated: 'Terminated',
  failed: 'Failed',
} as const;

/**
 * Largest total size of spec.env in bytes: every name and value, UTF-8 (a CEL rule of the CRD;
 * 64 entries of 32 KiB each would otherwise be allowed, held by etcd and every cache).
 */
export const ENV_MAX_TOTAL_BYTES = 32768;

/**
 * Largest total size of the values spec.env reads from Secrets, in bytes (UTF-8): the operator
 * refuses more (Ready=False, SecretValueInvalid). The same bound as plain values (the CRD's
 * ENV_MAX_TOTAL_BYTES), so a session's env stays well under the kernel's limits on a process's
 * environment and a bind stays small.
 */
export const SECRET_ENV_MAX_TOTAL_BYTES = 32768;

/**
 * Env var carrying spec.startup.command into the agent of a Pod created for its session (a warm
 * Pod gets it in its bind instead). The agent's own setting: its shell never sees it (SANDBOX_AGENT_*
 * are stripped), and it holds no secret (the command is in the CR for anyone who may read it).
 */
export const STARTUP_COMMAND_ENV = 'SANDBOX_AGENT_STARTUP_COMMAND';

/**
 * Egress through the platform's proxy (docs/egress.md, ADR 0034). With the proxy enabled the
 * operator mounts the namespace's interception CA (ConfigMap EGRESS_CA_CONFIGMAP, published by the
 * proxy, optional: it may appear after the Pod starts) at EGRESS_CA_DIR, and tells the agent where
 * it is with EGRESS_CA_ENV. The agent keeps EGRESS_TRUST_BUNDLE (the image's public CAs plus that
 * CA) current, and the Pod's SSL_CERT_FILE, CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO and
 * PIP_CERT name it, so tools trust intercepted HTTPS and public hosts alike.
 */
export const EGRESS_CA_CONFIGMAP = 'sandbox-egress-ca';
/** Key of the CA certificate (PEM) in EGRESS_CA_CONFIGMAP. */
export const EGRESS_CA_KEY = 'ca.crt';
/** Where the sandbox container sees the namespace's interception CA. */
export const EGRESS_CA_DIR = '/var/run/sandbox-egress';
/** The interception CA's file in the sandbox container (NODE_EXTRA_CA_CERTS names it). */
export const EGRESS_CA_FILE = `${EGRESS_CA_DIR}/${EGRESS_CA_KEY}`;
/** The agent's own setting (stripped from its shell like every SANDBOX_AGENT_*): the CA file to watch. */
export const EGRESS_CA_ENV = 'SANDBOX_AGENT_EGRESS_CA';
/** The trust bundle the agent writes (public CAs + the interception CA), on the /tmp emptyDir. */
export const EGRESS_TRUST_BUNDLE = '/tmp/.sandbox-egress/ca-bundle.pem';

/** Port the in-pod agent listens on. */
export const AGENT_PORT = 8090;
/**
 * Base of the `type` URI of every RFC 9457 problem the agent and the gateway answer with
 * (`<base><slug>`); the gateway reads the slugs of the agent's problems by it.
 */
export const PROBLEM_BASE = 'https://sandbox.dev/problems/';
/** Key of the token in the session Secret. */
export const TOKEN_SECRET_KEY = 'token';
/** Directory the token Secret is mounted at inside the sandbox container. */
export const TOKEN_MOUNT_DIR = '/var/run/sandbox';
/** Path of the token file inside the sandbox container. */
export const TOKEN_FILE = `${TOKEN_MOUNT_DIR}/${TOKEN_SECRET_KEY}`;
/** Env var that also carries the token into the sandbox container (from the Secret). */
export const TOKEN_ENV = 'SANDBOX_TOKEN';
/**
 * Prefix under which spec.env reaches an Agent-transport container: `NODE_OPTIONS` arrives as
 * `SANDBOX_ENV_NODE_OPTIONS`, which nothing interprets, so the session's env cannot steer the
 * agent's own process (node, the dynamic loader, the probe); the agent exports the variables
 * under their own names in the user's bash only. One variable per entry, not one JSON document:
 * Linux refuses any single env string over 128 KiB (MAX_ARG_STRLEN) at exec. KubernetesExec
 * containers (no agent) get spec.env as it is. The CRD reserves SANDBOX_* names, so no entry
 * can collide.
 */
export const SESSION_ENV_PREFIX = 'SANDBOX_ENV_';
/** The writable workspace of the sandbox container (also HOME). */
export const WORKSPACE_DIR = '/workspace';
/** Name of the sandbox container in the Pod. */
export const SANDBOX_CONTAINER = 'sandbox';
