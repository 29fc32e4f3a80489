/**
 * E2B sandbox IDs. The SDKs name a sandbox by one opaque string: in control API paths, and on
 * every envd call in the `E2b-Sandbox-Id` header (which carries no API key). The ID therefore has
 * to locate the session by itself: it is `<session name>.<namespace>`. Both parts are DNS labels,
 * which cannot hold a dot, so the split is unambiguous, and the ID reads like a host name.
 */
import { isDnsLabel } from '@sandbox-platform/api';

/** A session as an E2B sandbox ID names it. */
export interface SandboxRef {
  namespace: string;
  name: string;
}

/** The E2B sandbox ID of a session. */
export function sandboxId(ref: SandboxRef): string {
  return `${ref.name}.${ref.namespace}`;
}

/** The session an ID names, or undefined for anything that is not `<DNS label>.<DNS label>`. */
export function parseSandboxId(id: string | undefined): SandboxRef | undefined {
  if (id === undefined || id.length > 127) return undefined;
  const dot = id.indexOf('.');
  if (dot < 0 || id.indexOf('.', dot + 1) >= 0) return undefined;
  const name = id.slice(0, dot);
  const namespace = id.slice(dot + 1);
  return isDnsLabel(name) && isDnsLabel(namespace) ? { namespace, name } : undefined;
}
