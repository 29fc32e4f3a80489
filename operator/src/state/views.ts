/**
 * What the operator keeps of its Pods, Secrets and workspace claims: small projections, not whole
 * objects. The owned-object informers cache only these, which bounds memory at thousands of
 * sessions and keeps Secret data (tokens) out of the operator's heap altogether.
 */

/** The controller ownerReference of a child, if any. */
export interface ControllerRefView {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/** Metadata of a child. Shaped like ObjectMeta so client-node's ListWatch can index it. */
export interface ChildMetadata {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly deletionTimestamp?: string;
  /** Value of the sandbox.dev/session label. */
  readonly sessionLabel?: string;
  readonly controller?: ControllerRefView;
}

/** A Secret as the operator sees it: identity and the session UID annotation, never its data. */
export interface SecretView {
  readonly metadata: ChildMetadata;
  /** The sandbox.dev/session-uid annotation. */
  readonly sessionUID?: string;
}

/** A workspace PersistentVolumeClaim as the operator sees it. */
export interface ClaimView {
  readonly metadata: ChildMetadata;
  /** metadata.creationTimestamp (RFC 3339): the bind timeout counts from it. */
  readonly createdAt?: string;
  /** status.phase: Pending, Bound or Lost. */
  readonly phase?: string;
  /** spec.storageClassName as stored (the DefaultStorageClass admission fills it in). */
  readonly storageClassName?: string;
  /** spec.volumeName once bound. */
  readonly volumeName?: string;
}

/** A Pod condition as the operator sees it. */
export interface PodConditionView {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

/** The state of one container, reduced to what readiness and failure reasons need. */
export interface ContainerView {
  readonly name: string;
  readonly ready: boolean;
  readonly restartCount: number;
  readonly waitingReason?: string;
  readonly waitingMessage?: string;
  readonly terminatedReason?: string;
}

/** A Pod as the operator sees it. */
export interface PodView {
  readonly metadata: ChildMetadata;
  readonly phase?: string;
  /** status.reason, e.g. Evicted. */
  readonly reason?: string;
  /** status.message. */
  readonly message?: string;
  readonly podIP?: string;
  readonly nodeName?: string;
  readonly conditions: readonly PodConditionView[];
  readonly containers: readonly ContainerView[];
}
