import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Root of the repository: the nearest directory above this module that holds the session CRD.
 * Searched, not counted, because this module also runs bundled into a benchmark's file under
 * node_modules/.cache/<bench>/ (bench-runner.mjs), three levels below the root, while its source
 * is two (test-support/src/localkube.ts); the fallback is the source's answer.
 */
export const REPO_ROOT = findRepoRoot(dirname(fileURLToPath(import.meta.url)));

function findRepoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'crds/sandboxsessions.sandbox.dev.yaml'))) return dir;
  }
  return resolve(from, '../..');
}

const BUILD_SCRIPT = join(REPO_ROOT, 'test-e2e/localkube/build.sh');

/**
 * Path of the localkube binary: $LOCALKUBE_BIN, else the one test-e2e/localkube/build.sh keeps
 * (built on first use; with an unchanged source the cached binary is reused at once).
 */
let builtBinary: string | undefined;

export function localkubeBinary(): string {
  const fromEnv = process.env.LOCALKUBE_BIN;
  if (fromEnv) return fromEnv;
  if (builtBinary) return builtBinary;
  // stderr is inherited: a first build takes minutes and prints its progress.
  const build = spawnSync(BUILD_SCRIPT, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (build.status !== 0) {
    throw new Error(`${BUILD_SCRIPT} failed with status ${String(build.status)}`, { cause: build.error });
  }
  builtBinary = build.stdout.trim();
  return builtBinary;
}

/** A control plane started by {@link startControlPlane}. */
export interface RunningControlPlane {
  /** admin kubeconfig (client certificate in system:masters). */
  kubeconfig: string;
  /** state dir: etcd data, certificates, logs/<component>.log. */
  dir: string;
  /** pid of the localkube supervisor; its components are its child processes (benchmarks sum their CPU). */
  pid: number | undefined;
  /** Stops every component and deletes the state dir (kept when `keepDir`). */
  stop(opts?: { keepDir?: boolean }): Promise<void>;
}

/** Options of {@link startControlPlane}. */
export interface ControlPlaneOptions {
  /** binary to run (default {@link localkubeBinary}). */
  binary?: string;
  /** how long to wait for READY (default 180 s: a loaded 2-core machine can be slow). */
  timeoutMs?: number;
  /**
   * CRDs (a dir of *.yaml) to apply before the controller manager starts, so its garbage
   * collector knows them at once instead of after its 30 s discovery resync.
   */
  crdDir?: string;
}

/**
 * Starts `localkube up --profile=controlplane` (etcd, kube-apiserver, kube-controller-manager; no
 * scheduler, kubelet or kube-proxy) on free loopback ports in a fresh temp dir, and resolves once
 * it printed READY: /readyz is ok and the default ServiceAccount exists.
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<RunningControlPlane> {
  const binary = opts.binary ?? localkubeBinary();
  const dir = mkdtempSync(join(tmpdir(), 'localkube-cp-'));
  const args = [
    'up',
    '--profile=controlplane',
    `--dir=${dir}`,
    '--port=0',
    '--etcd-port=0',
    '--exit-with-parent',
  ];
  if (opts.crdDir) args.push(`--crds=${opts.crdDir}`);
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const kubeconfig = await waitForReady(child, () => output, opts.timeoutMs ?? 180_000).catch(
    async (err: unknown) => {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
      throw err;
    },
  );
  return {
    kubeconfig,
    dir,
    pid: child.pid,
    async stop({ keepDir = false } = {}): Promise<void> {
      await stopChild(child);
      if (!keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function waitForReady(child: ChildProcess, log: () => string, timeoutMs: number): Promise<string> {
  return new Promise((resolveReady, reject) => {
    let stdout = '';
    const timer = setTimeout(() => {
      reject(new Error(`localkube control plane not ready after ${timeoutMs} ms; its output:\n${log()}`));
    }, timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /^READY (.+)$/m.exec(stdout);
      if (match?.[1]) {
        clearTimeout(timer);
        resolveReady(match[1]);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `localkube exited (code ${String(code)}, signal ${String(signal)}) before READY:\n${log()}`,
        ),
      );
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error('could not run localkube', { cause: err }));
    });
  });
}

/** SIGTERM (the supervisor stops its components in order), SIGKILL after 60 s. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  await exited;
  clearTimeout(timer);
}
