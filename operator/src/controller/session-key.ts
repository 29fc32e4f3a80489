/**
 * The identity of a SandboxSession in the work queue: `namespace/name`. Events of every source
 * (the session watch, the owned Pod and Secret informers, the resync) reduce to this key, and the
 * reconcile re-reads the object by it, so a stale event payload never drives a decision.
 */
export interface SessionKey {
  readonly namespace: string;
  readonly name: string;
}

/** The queue key of a session. */
export function keyString(key: SessionKey): string {
  return `${key.namespace}/${key.name}`;
}

/** Parses a queue key; throws on a malformed key because only our own code produces them. */
export function parseKey(key: string): SessionKey {
  const slash = key.indexOf('/');
  if (slash <= 0 || slash === key.length - 1 || key.indexOf('/', slash + 1) !== -1) {
    throw new Error(`malformed session key ${JSON.stringify(key)}`);
  }
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
