/**
 * Detects a session watch that stopped delivering without failing. A dead peer is caught by TCP
 * keep-alive (client-node 0.20's watch, under dot-i, sets 30 s idle and Node adds 10 probes 1 s
 * apart: about 40 s, then a socket error and dot-i exits 1). What keep-alive cannot see is a
 * connection that stays alive at the TCP level but carries no events: a proxy or load balancer in
 * between that stopped forwarding, or a stuck server. The periodic resync's LIST is the reference:
 * a session version the LIST showed must have reached the watch-fed cache by the next LIST, one
 * resync period later. A watch that is merely behind catches up in far less; one that still has
 * not delivered a version listed a whole period ago has stopped. The resync keeps reconciling
 * meanwhile, but every change would wait up to a period, so the operator restarts (main.ts) and
 * re-watches (dot-i cannot re-watch without exiting).
 *
 * Pure: the caller supplies the listed versions and what the watch has seen.
 */

/** A session as a LIST showed it (resourceVersion as a number: see session-cache.ts). */
export interface ListedVersion {
  readonly key: string;
  readonly uid: string;
  readonly rv: bigint;
}

/** What the watch has delivered of a session (undefined: nothing). */
export type SeenVersion = { readonly uid: string; readonly rv: bigint | undefined } | undefined;

/** Remembers, per LIST scope, the listed versions the watch had not reached yet. */
export class WatchLag {
  private readonly behind = new Map<string, Map<string, ListedVersion>>();

  /**
   * After a complete LIST of `scope` (a namespace, '' = all): the keys whose version, listed by
   * the previous LIST of the scope, the watch has still not delivered (nor a newer one).
   */
  afterList(scope: string, listed: readonly ListedVersion[], seen: (key: string) => SeenVersion): string[] {
    const before = this.behind.get(scope);
    const now = new Map<string, ListedVersion>();
    const stale: string[] = [];
    for (const item of listed) {
      const delivered = seen(item.key);
      const earlier = before?.get(item.key);
      if (earlier && earlier.uid === item.uid && !reached(delivered, earlier)) stale.push(item.key);
      if (!reached(delivered, item)) now.set(item.key, item);
    }
    this.behind.set(scope, now);
    return stale;
  }
}

function reached(seen: SeenVersion, listed: ListedVersion): boolean {
  return seen !== undefined && seen.uid === listed.uid && seen.rv !== undefined && seen.rv >= listed.rv;
}
