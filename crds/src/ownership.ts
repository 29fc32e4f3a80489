/**
 * Exact ownership: the one test, shared by the operator and the gateway, of whether an object is
 * the child of a given SandboxSession (or SandboxPool). Anyone with `edit` in a namespace can
 * create a Pod, Secret or claim with any ownerReference and any label, so neither labels nor a
 * partial match of the reference (kind and UID alone) prove anything: a tenant once planted a Pod
 * in its own namespace whose controller reference named another tenant's session UID with a
 * made-up apiVersion, and the operator took it for that session's Pod (issue 25).
 *
 * A child belongs to an owner only when all of these hold:
 *   - it is in the owner's namespace (ownerReferences never cross namespaces; the garbage
 *     collector treats a cross-namespace reference as absent);
 *   - its controller reference (the one with `controller: true`) names the owner's exact
 *     apiVersion (group and a version the CRD serves), kind, name and UID.
 */
import { API_VERSION, KIND } from './constants.js';
import { POOL_KIND } from './pool.js';

/** A controller ownerReference as read off an object (fields may be missing on hostile input). */
export interface ControllerRefLike {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly uid?: string;
}

/** The identity of an owner (a SandboxSession or a SandboxPool). */
export interface OwnerIdentity {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/**
 * The apiVersions under which the API server serves SandboxSession and SandboxPool (the CRDs'
 * served versions). A new served version is added here when the CRD gains it.
 */
export const OWNER_API_VERSIONS: readonly string[] = [API_VERSION];

function exact(
  kind: string,
  childNamespace: string,
  ref: ControllerRefLike | undefined,
  owner: OwnerIdentity,
): boolean {
  return (
    ref !== undefined &&
    owner.uid !== '' &&
    childNamespace === owner.namespace &&
    ref.kind === kind &&
    ref.apiVersion !== undefined &&
    OWNER_API_VERSIONS.includes(ref.apiVersion) &&
    ref.name === owner.name &&
    ref.uid === owner.uid
  );
}

/** True when the child (in `childNamespace`, with controller reference `ref`) belongs to the session. */
export function controlledBySession(
  childNamespace: string,
  ref: ControllerRefLike | undefined,
  session: OwnerIdentity,
): boolean {
  return exact(KIND, childNamespace, ref, session);
}

/** True when the child belongs to the pool. */
export function controlledByPool(
  childNamespace: string,
  ref: ControllerRefLike | undefined,
  pool: OwnerIdentity,
): boolean {
  return exact(POOL_KIND, childNamespace, ref, pool);
}

/**
 * True when the reference has the shape of one of ours (a SandboxSession or SandboxPool under a
 * served apiVersion). A reference that names our kind under another apiVersion is a forgery: the
 * garbage collector cannot resolve it, so such an object never goes away by itself, and it must
 * never be treated as ours.
 */
export function isPlatformRef(ref: ControllerRefLike | undefined): boolean {
  return (
    ref !== undefined &&
    (ref.kind === KIND || ref.kind === POOL_KIND) &&
    ref.apiVersion !== undefined &&
    OWNER_API_VERSIONS.includes(ref.apiVersion)
  );
}
