/**
 * The interactive benchmark's gateway as it was at another commit, for before/after figures of a
 * change to the stream path in one run (interactive.bench.ts --baseline <commit>): the sources of
 * api-gateway, crds/src and sandbox-agent/src at that commit are extracted with `git archive`
 * (read-only: no worktree, no checkout), this tree's bench files are laid over that tree's
 * api-gateway/bench (so the old gateway code is served by this bench's own `--serve gateway` role,
 * with the same configuration), bundled with esbuild next to this package's node_modules, and
 * started as a child process. Only the gateway's code differs between the two modes.
 */
import { bundleCommit, type CommitBundle } from './baseline.js';

/** A bundle of this bench over the gateway sources of `commit`, and how to remove it. */
export function baselineBundle(commit: string): Promise<CommitBundle> {
  return bundleCommit(commit, {
    entry: 'api-gateway/bench/interactive.bench.ts',
    paths: ['api-gateway/src', 'crds/src', 'sandbox-agent/src'],
    overlayBench: true,
    prefix: 'interactive-baseline-',
  });
}
