/**
 * The sessions this leader has reconciled, with their current Ready reason. Feeds the
 * sessions-by-reason gauge, and lets the resync find sessions that vanished without a DELETED
 * event (dot-i re-watches without a resourceVersion and so never reports deletions it missed).
 * One short string per session: a few hundred KB at 5,000 sessions.
 */
export class SessionRegistry {
  private readonly reasons = new Map<string, string>();

  /** Records the session's Ready reason; undefined forgets the session. */
  set(key: string, reason: string | undefined): void {
    if (reason === undefined) this.reasons.delete(key);
    else this.reasons.set(key, reason);
  }

  /** Keys of every known session. */
  keys(): string[] {
    return [...this.reasons.keys()];
  }

  /** Number of sessions per Ready reason. */
  countsByReason(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const reason of this.reasons.values()) counts.set(reason, (counts.get(reason) ?? 0) + 1);
    return counts;
  }
}
