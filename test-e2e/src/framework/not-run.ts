/**
 * Tests that cannot run on the cluster at hand are skipped with a recorded reason, never turned
 * into a pass by an early `return`: the e2e reporter lists each as NOT RUN with its reason at the
 * end of the run (e2e-summary.ts). Import this module from spec files only (it imports
 * `@jest/globals`); it is not re-exported by the framework's index.
 */
import { describe, expect, it } from '@jest/globals';

import { appendNotRun } from './e2e-summary.js';

/** Whether the specs run against the local cluster (no E2E_KUBECONFIG naming another one). */
export const onLocalCluster = !process.env.E2E_KUBECONFIG;

/** The reason a local-only spec gives against another cluster. */
export const NOT_LOCAL_REASON =
  'needs the local cluster on this machine (E2E_KUBECONFIG names another cluster)';

/** The test file being loaded or run (jest sets it before it loads the file). */
function currentTestFile(): string {
  return expect.getState().testPath ?? '(unknown test file)';
}

/**
 * Records that `title` of the current test file does not run, and why. For a whole test or
 * describe block use {@link itIf} / {@link describeIf}; call this directly for a part of a test
 * that runs without it (e.g. a matrix cell the cluster cannot host).
 */
export function notRun(title: string, reason: string): void {
  appendNotRun({ file: currentTestFile(), title, reason });
}

type TestFn = Parameters<typeof it>[1];
type BlockFn = Parameters<typeof describe>[1];

/**
 * `it` when `reason` is undefined; otherwise a test that is recorded as not run with `reason` and
 * skipped (`it.skip`), so it shows in the e2e summary instead of passing.
 */
export function itIf(reason: string | undefined): (title: string, fn: TestFn, timeout?: number) => void {
  return (title, fn, timeout) => {
    if (reason === undefined) return it(title, fn, timeout);
    notRun(title, reason);
    it.skip(title, fn, timeout);
  };
}

/** `describe` when `reason` is undefined; otherwise the whole block is recorded and skipped. */
export function describeIf(reason: string | undefined): (title: string, fn: BlockFn) => void {
  return (title, fn) => {
    if (reason === undefined) return describe(title, fn);
    notRun(title, reason);
    describe.skip(title, fn);
  };
}

/** A test that runs on the local cluster only (recorded as not run elsewhere). */
export const itOnLocal = itIf(onLocalCluster ? undefined : NOT_LOCAL_REASON);

/** A describe block that runs on the local cluster only (recorded as not run elsewhere). */
export const describeOnLocal = describeIf(onLocalCluster ? undefined : NOT_LOCAL_REASON);
