/**
 * The gateway as it was before a change, for before/after figures in one run: the sources of
 * api-gateway, crds/src and sandbox-agent/src at a git commit are extracted with `git archive`
 * (read-only: no worktree, no checkout), that tree's own bench entry is bundled with esbuild next
 * to this package's node_modules (so its packages resolve as they do here; the dependencies the
 * old gateway uses did not change), and its `--serve gateway` role is started as a child process
 * in front of the same agent as the current gateway. What runs is the old tree's own gateway code
 * and its own local bench setup (static store, production logger into a pipe), not a toggle.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { build } from 'esbuild';

import type { AgentTarget } from './references.js';

/** A gateway of another commit, serving on `url`. */
export interface BaselineGateway {
  url: string;
  commit: string;
  close(): Promise<void>;
}

/** The repository's top directory (the bench runs as a bundle somewhere below it). */
export function repoRoot(): string {
  return execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: import.meta.dirname })
    .toString()
    .trim();
}

/** What to bundle from another commit. */
export interface CommitBundleOptions {
  /** The bench entry, relative to the repository (e.g. api-gateway/bench/gateway.bench.ts). */
  entry: string;
  /** Paths `git archive` extracts from the commit. */
  paths: readonly string[];
  /** Lay this tree's api-gateway/bench over the commit's (its old gateway served by this bench). */
  overlayBench?: boolean;
  /** Prefix of the temporary directory under api-gateway/node_modules/.cache. */
  prefix: string;
}

/** A bundle of a bench entry at another commit, and how to remove it. */
export interface CommitBundle {
  bundle: string;
  commit: string;
  readonly remove: () => void;
}

/**
 * Extracts the commit's sources (`git archive`, no checkout) and bundles the bench entry with
 * esbuild under api-gateway/node_modules/.cache, so the bundle's bare imports resolve from it.
 */
export async function bundleCommit(commit: string, opts: CommitBundleOptions): Promise<CommitBundle> {
  const root = repoRoot();
  const full = execFileSync('git', ['-C', root, 'rev-parse', '--verify', `${commit}^{commit}`])
    .toString()
    .trim();
  const cache = join(root, 'api-gateway/node_modules/.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, opts.prefix));
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  try {
    const src = join(dir, 'src');
    mkdirSync(src);
    const archive = execFileSync('git', ['-C', root, 'archive', full, ...opts.paths], {
      maxBuffer: 256 << 20,
    });
    execFileSync('tar', ['-x', '-C', src], { input: archive });
    if (opts.overlayBench) {
      cpSync(join(root, 'api-gateway/bench'), join(src, 'api-gateway/bench'), { recursive: true });
    }
    const bundle = join(dir, `${opts.prefix}bundle.mjs`);
    await build({
      entryPoints: [join(src, opts.entry)],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: bundle,
      logLevel: 'warning',
      packages: 'external',
      alias: { '@sandbox-platform/api': join(src, 'crds/src/index.ts') },
    });
    return { bundle, commit: full.slice(0, 12), remove };
  } catch (err) {
    remove();
    throw err;
  }
}

/** Starts the gateway of `commit` in front of the agent at `target` (its own process). */
export async function startBaselineGateway(commit: string, target: AgentTarget): Promise<BaselineGateway> {
  const {
    bundle,
    commit: short,
    remove,
  } = await bundleCommit(commit, {
    entry: 'api-gateway/bench/gateway.bench.ts',
    paths: ['api-gateway', 'crds/src', 'sandbox-agent/src'],
    prefix: 'baseline-',
  });
  try {
    const child = spawn(
      process.execPath,
      [bundle, '--serve', 'gateway', '--agent-host', target.host, '--agent-port', String(target.port)],
      { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, BENCH_AGENT_TOKEN: target.token } },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        const nl = out.indexOf('\n');
        if (nl >= 0) resolve(out.slice(0, nl));
      });
      child.once('exit', (code) => reject(new Error(`baseline gateway exited (${code}) before it started`)));
    });
    return {
      url: (JSON.parse(line) as { url: string }).url,
      commit: short,
      close: async () => {
        child.stdin.end();
        await exited;
        remove();
      },
    };
  } catch (err) {
    remove();
    throw err;
  }
}
