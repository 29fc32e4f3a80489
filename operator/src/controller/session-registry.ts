/**
 * The sessions this leader has reconciled, with their current Ready reason and since when the
 * Ready condition has its status. Feeds the sessions-by-reason and oldest-not-Ready gauges, and
 * lets the resync find sessions that vanished without a DELETED event (dot-i re-watches without a
 * resourceVersion and so never reports deletions it missed). One short string and a number per
 * session: a few hundred KB at 5,000 sessions.
 */
export class SessionRegistry {
  private readonly entries = new Map<string, { reason: string; sinceMs: number | undefined }>();

  /**
   * Records the session's Ready reason and the Ready condition's lastTransitionTime (ms);
   * undefined forgets the session.
   */
  set(key: string, reason: string | undefined, sinceMs?: number): void {
    if (reason === undefined) this.entries.delete(key);
    else this.entries.set(key, { reason, sinceMs });
  }

  /** Keys of every known session. */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** Number of sessions per Ready reason. */
  countsByReason(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { reason } of this.entries.values()) counts.set(reason, (counts.get(reason) ?? 0) + 1);
    return counts;
  }

  /** Per Ready reason, the earliest lastTransitionTime (ms) of the sessions with that reason. */
  earliestByReason(): Map<string, number> {
    const earliest = new Map<string, number>();
    for (const { reason, sinceMs } of this.entries.values()) {
      if (sinceMs === undefined) continue;
      const known = earliest.get(reason);
      if (known === undefined || sinceMs < known) earliest.set(reason, sinceMs);
    }
    return earliest;
  }
}
