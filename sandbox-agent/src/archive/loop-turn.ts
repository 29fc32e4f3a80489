/**
 * The archive routes call the file system synchronously: under gVisor each asynchronous call
 * costs about 0.5 ms more than its synchronous twin (the libuv worker's wake-up through the
 * sentry; measured in a gVisor Pod: 2,000 stats 1,148 ms async vs 168 ms sync; 1,000 files
 * written with open, two writes, chmod, utimes and close 4,867 ms vs 807 ms), several times a
 * small file's own work. A LoopTurn keeps the agent answering meanwhile (health probes, other
 * calls): a walk awaits `maybe()` between entries, which gives the event loop a turn once
 * SLICE_MS have passed since the last one.
 */
import { performance } from 'node:perf_hooks';

/** Longest the archive code holds the event loop between turns. */
export const SLICE_MS = 5;

export class LoopTurn {
  private last = performance.now();

  /** Gives the event loop a turn when the slice is used up. */
  async maybe(): Promise<void> {
    if (performance.now() - this.last < SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.last = performance.now();
  }

  /** The caller just awaited I/O (the loop had its turn). */
  turned(): void {
    this.last = performance.now();
  }
}
