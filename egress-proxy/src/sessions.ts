/**
 * Which session a connection comes from, and what it may reach. The proxy knows a sandbox only by
 * the source address of its connection: the Pod with that IP, when it belongs exactly to a
 * SandboxSession (crds/src/ownership.ts, ADR 0027), is that session's. Sandbox Pods drop every
 * capability (no raw sockets), so they cannot send from another Pod's address.
 */
import type { EgressRule } from './rules.js';

/** A session as the proxy sees it. */
export interface SandboxIdentity {
  namespace: string;
  name: string;
  uid: string;
}

/** The proxy's narrow view of sessions (kube-index.ts on the cluster; fakes in tests). */
export interface SessionResolver {
  /** The session whose sandbox Pod has this IP, if any. */
  byAddress(ip: string): SandboxIdentity | undefined;
  /**
   * The session's effective rules now (its own and the namespace defaults): the same array while
   * they are unchanged, a new one once they change (the proxy caches decisions per array). The
   * array is never modified.
   */
  rules(session: SandboxIdentity): readonly EgressRule[];
}

/** Reads a credential for an injected header. */
export interface SecretReader {
  /** The value of `key` of Secret `name` in `namespace`; throws when missing. */
  read(namespace: string, name: string, key: string): Promise<string>;
}

/** An IPv4-mapped IPv6 address (::ffff:10.0.0.1) as its IPv4 form. */
export function plainAddress(ip: string | undefined): string {
  if (ip === undefined) return '';
  return ip.startsWith('::ffff:') ? ip.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '') : ip;
}
