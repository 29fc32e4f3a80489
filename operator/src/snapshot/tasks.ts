/**
 * Long copies (a snapshot, a restore) run outside the reconcile that starts them: a reconcile
 * must not hold a worker for the minutes a large workspace takes. The reconcile starts a task
 * under a key, later reconciles read its state, and the task's end wakes the key's reconcile.
 * Tasks live in this process only: after a restart (or a lost Lease) the next leader starts them
 * again from their beginning, which both copies allow (a snapshot cleans its prefix first, a
 * restore empties the workspace first). stop() aborts every running task.
 */

/** The state of a task. */
export type TaskState<R> =
  | { readonly state: 'running'; readonly startedAt: Date }
  | { readonly state: 'done'; readonly result: R; readonly startedAt: Date }
  | { readonly state: 'failed'; readonly error: unknown; readonly startedAt: Date };

/** Tasks by key. */
export class Tasks<R> {
  private readonly tasks = new Map<string, { state: TaskState<R>; abort: AbortController }>();

  /** `onSettled(key)` runs when a task ends (the key's owner reconciles again). */
  constructor(private readonly onSettled: (key: string) => void) {}

  /** The task of `key`, if any. */
  get(key: string): TaskState<R> | undefined {
    return this.tasks.get(key)?.state;
  }

  /** Running tasks. */
  get running(): number {
    let n = 0;
    for (const t of this.tasks.values()) if (t.state.state === 'running') n++;
    return n;
  }

  /** Starts `work` under `key` (replacing a settled task of that key). */
  start(key: string, work: (signal: AbortSignal) => Promise<R>): void {
    if (this.tasks.get(key)?.state.state === 'running') return;
    const abort = new AbortController();
    const startedAt = new Date();
    const entry = { state: { state: 'running', startedAt } as TaskState<R>, abort };
    this.tasks.set(key, entry);
    void work(abort.signal).then(
      (result) => this.settle(key, entry, { state: 'done', result, startedAt }),
      (error: unknown) => this.settle(key, entry, { state: 'failed', error, startedAt }),
    );
  }

  /** Aborts a running task and forgets the key. */
  cancel(key: string): void {
    const entry = this.tasks.get(key);
    entry?.abort.abort(new Error('cancelled'));
    this.tasks.delete(key);
  }

  /** Forgets a settled task (its result was recorded). */
  forget(key: string): void {
    if (this.tasks.get(key)?.state.state !== 'running') this.tasks.delete(key);
  }

  /** Aborts every task (the leader's work stops). */
  stop(): void {
    for (const entry of this.tasks.values()) entry.abort.abort(new Error('the operator is stopping'));
    this.tasks.clear();
  }

  private settle(key: string, entry: { state: TaskState<R> }, state: TaskState<R>): void {
    if (this.tasks.get(key) !== entry) return; // cancelled or replaced meanwhile
    entry.state = state;
    this.onSettled(key);
  }
}
