/**
 * Runs the operator as a child process against the integration cluster, the way it runs in a Pod:
 * `node operator/dist/main.js` with configuration in the environment. Captures its JSON logs,
 * finds its HTTP port, and stops it with a signal (exit code returned) or SIGKILL.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { REPO_ROOT } from '@sandbox-platform/test-support';

let built = false;

/** Compiles the operator (tsc -b is incremental: an up-to-date build costs about a second). */
export function buildOperator(): void {
  if (built) return;
  const res = spawnSync('nice', ['npx', 'tsc', '-b', 'operator'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`tsc -b operator failed:\n${res.stdout}${res.stderr}`);
  built = true;
}

let keyFile: string | undefined;

/** Removes the key's directory. */
function removeKeyFile(): void {
  if (keyFile) rmSync(dirname(keyFile), { recursive: true, force: true });
}

// Under jest, after every test file that imports this module (jest's injected global); elsewhere
// (operator/bench bundles this module) at exit. Not imported from @jest/globals, which a bundle
// outside jest cannot load.
const jestAfterAll = (globalThis as { afterAll?: (fn: () => void) => void }).afterAll;
if (jestAfterAll) jestAfterAll(removeKeyFile);
else process.once('exit', removeKeyFile);

/** A 32-byte master key in a temp file, shared by every operator of a test file (removed after it). */
export function masterKeyFile(): string {
  if (!keyFile) {
    const dir = mkdtempSync(join(tmpdir(), 'operator-it-'));
    keyFile = join(dir, 'master-key');
    writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
  }
  return keyFile;
}

/** One parsed log line. */
export type LogLine = Record<string, unknown> & { level?: string; message?: string };

/** A running operator. */
export class OperatorProcess {
  readonly lines: LogLine[] = [];
  readonly exited: Promise<number | null>;
  /** The last 20,000 characters of output, for failure messages. */
  private raw = '';
  private partial = '';
  private stderr = '';

  constructor(
    readonly identity: string,
    private readonly child: ChildProcess,
  ) {
    child.stdout?.on('data', (chunk: Buffer) => this.consume(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** The process id. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The HTTP port it bound (from its start-up log line). */
  async httpPort(timeoutMs = 20_000): Promise<number> {
    const line = await this.waitForLog((l) => l.message === 'operator starting', timeoutMs);
    return Number(line.httpPort);
  }

  /** The metrics port it bound (from its start-up log line). */
  async metricsPort(timeoutMs = 20_000): Promise<number> {
    const line = await this.waitForLog((l) => l.message === 'operator starting', timeoutMs);
    return Number(line.metricsPort);
  }

  /** GET on its HTTP endpoints: /metrics on the metrics port, anything else on the probe port. */
  async get(path: string): Promise<{ status: number; body: string }> {
    const port = path === '/metrics' ? await this.metricsPort() : await this.httpPort();
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, body: await res.text() };
  }

  /** Resolves with the first log line matching, waiting for it if needed. */
  async waitForLog(match: (line: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find(match);
      if (found) return found;
      if (Date.now() > deadline) {
        throw new Error(
          `operator ${this.identity}: no matching log line in ${timeoutMs} ms; last lines:\n${this.tail()}`,
        );
      }
      if (this.child.exitCode !== null) {
        throw new Error(
          `operator ${this.identity} exited with ${this.child.exitCode}:\n${this.tail()}\n${this.stderr}`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Lines whose message matches. */
  messages(message: string): LogLine[] {
    return this.lines.filter((l) => l.message === message);
  }

  /** Sends a signal and resolves with the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }

  /** The last log lines, for failure messages. */
  tail(n = 20): string {
    return this.raw.split('\n').slice(-n).join('\n');
  }

  private consume(text: string): void {
    this.raw = (this.raw + text).slice(-20_000);
    const parts = (this.partial + text).split('\n');
    this.partial = parts.pop() ?? '';
    for (const part of parts) {
      try {
        // The platform's line shape names the text `msg`; tests match it as `message`.
        const line = JSON.parse(part) as LogLine & { msg?: string };
        this.lines.push({ ...line, message: line.msg });
      } catch {
        this.lines.push({ message: part });
      }
    }
  }
}

/** Options of startOperator. */
export interface StartOptions {
  /** WATCH_NAMESPACE and LEASE_NAMESPACE. */
  readonly namespace: string;
  readonly identity?: string;
  readonly env?: Record<string, string>;
  /** Node.js flags before the script (e.g. --cpu-prof, which NODE_OPTIONS does not accept). */
  readonly nodeArgs?: readonly string[];
}

/**
 * Starts an operator watching one namespace (its Lease lives there too). $OPERATOR_MAIN runs
 * another build instead of operator/dist/main.js (the benchmark compares two builds that way).
 */
export function startOperator(opts: StartOptions): OperatorProcess {
  const main = process.env.OPERATOR_MAIN ?? join(REPO_ROOT, 'operator/dist/main.js');
  if (!process.env.OPERATOR_MAIN) buildOperator();
  const identity = opts.identity ?? `op-${randomBytes(3).toString('hex')}`;
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), main], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      KUBECONFIG: process.env.KUBECONFIG,
      SANDBOX_MASTER_KEY_FILE: masterKeyFile(),
      WATCH_NAMESPACE: opts.namespace,
      LEASE_NAMESPACE: opts.namespace,
      POD_NAME: identity,
      HTTP_PORT: '0',
      METRICS_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'debug',
      ...opts.env,
    },
  });
  return new OperatorProcess(identity, child);
}
