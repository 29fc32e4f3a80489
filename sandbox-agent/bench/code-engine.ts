/**
 * Benchmark: the code interpreter's Python engine on this host, without the agent and without a
 * cluster (ADR 0033, "In-process engine"). For the engine of this tree (src/code/kernel-bridge.py:
 * IPython in the bridge's process) and, with --old-bridge, the ipykernel engine it replaced (the
 * bridge of 884423e^, which speaks ZeroMQ to `python -m ipykernel_launcher` started beside it):
 *   (a) a new context: spawn to ready, and spawn to the end of its first `1+1`;
 *   (b) warm `1+1` runs on one live engine each, p50/p99.
 * Engines alternate start by start and run by run, so load changes hit both alike.
 *
 *   git show 884423e^:sandbox-agent/src/code/kernel-bridge.py > /tmp/old-bridge.py
 *   node bench/run.mjs code-engine --old-bridge /tmp/old-bridge.py [--runs 200] [--starts 10]
 *
 * From sandbox-agent/; --python is from the repository root (default: the venv of
 * `make code-venv`) and needs IPython (and ipykernel for --old-bridge).
 */
import { type ChildProcess, spawn, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

// Run from the package (as `npm run bench -w sandbox-agent` does): the bundle lives elsewhere.
const repo = resolve(process.cwd(), '..');
const NEW_BRIDGE = join(repo, 'sandbox-agent/src/code/kernel-bridge.py');
const LIMITS = [1024 * 1024, 8 * 1024 * 1024, 16 * 1024 * 1024].map(String);
const WARMUP = 10;

interface Options {
  python: string;
  oldBridge?: string;
  runs: number;
  starts: number;
}

function parseArgs(argv: string[]): Options {
  const arg = (name: string): string | undefined => {
    const at = argv.indexOf(name);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const count = (name: string, dflt: number): number => {
    const n = Number(arg(name) ?? dflt);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
    return n;
  };
  const python = resolve(repo, arg('--python') ?? '.cache/python-stack/venv/bin/python');
  const old = arg('--old-bridge');
  return {
    python,
    oldBridge: old === undefined ? undefined : resolve(old),
    runs: count('--runs', 200),
    starts: count('--starts', 10),
  };
}

/** One live engine: its processes, its protocol lines and the runs waiting for their end. */
class Engine {
  private nextId = 1;
  private readonly waiting = new Map<string, () => void>();
  readonly ready: Promise<void>;

  private constructor(
    private readonly procs: ChildProcess[],
    private readonly dir: string,
  ) {
    const bridge = procs[procs.length - 1]!;
    let up!: () => void;
    let failed!: (err: Error) => void;
    this.ready = new Promise((res, rej) => ((up = res), (failed = rej)));
    for (const p of procs) p.once('exit', (code) => failed(new Error(`an engine process exited (${code})`)));
    const lines = createInterface({ input: bridge.stdout! });
    lines.on('line', (raw) => {
      const line = JSON.parse(raw) as { type: string; id?: string; message?: string };
      if (line.type === 'ready') up();
      else if (line.type === 'fatal') failed(new Error(line.message));
      else if (line.type === 'done' && line.id) this.waiting.get(line.id)?.();
    });
  }

  /** The in-process engine of this tree, or the ipykernel one (oldBridge) with its kernel. */
  static async start(python: string, oldBridge?: string): Promise<Engine> {
    const dir = await mkdtemp(join(tmpdir(), 'bench-code-'));
    const env = {
      ...process.env,
      MPLBACKEND: 'module://matplotlib_inline.backend_inline',
      IPYTHONDIR: join(dir, 'ipython'),
    };
    const io: SpawnOptions = { cwd: dir, env, detached: true, stdio: ['pipe', 'pipe', 'inherit'] };
    if (oldBridge === undefined) return new Engine([spawn(python, [NEW_BRIDGE, ...LIMITS], io)], dir);
    // As the agent started it before this change (src/code/kernel.ts of 884423e^).
    const conn = join(dir, 'kernel.json');
    const key = randomBytes(32).toString('hex');
    const file = { transport: 'ipc', ip: join(dir, 'k'), shell_port: 1, iopub_port: 2, stdin_port: 3 };
    await writeFile(
      conn,
      JSON.stringify({ ...file, control_port: 4, hb_port: 5, key, signature_scheme: 'hmac-sha256' }),
    );
    const kernel = spawn(
      python,
      ['-m', 'ipykernel_launcher', '-f', conn, '--HistoryManager.enabled=False', '--IPKernelApp.quiet=True'],
      { ...io, env: { ...env, PYDEVD_DISABLE_FILE_VALIDATION: '1' }, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    return new Engine([kernel, spawn(python, [oldBridge, conn, ...LIMITS], io)], dir);
  }

  /** Runs code; resolves at its done line. */
  run(code: string): Promise<void> {
    const id = String(this.nextId++);
    const done = new Promise<void>((res) => this.waiting.set(id, res));
    this.procs[this.procs.length - 1]!.stdin!.write(JSON.stringify({ op: 'execute', id, code }) + '\n');
    return done.finally(() => this.waiting.delete(id));
  }

  async stop(): Promise<void> {
    const exits = this.procs.map((p) => new Promise((res) => p.once('close', res)));
    for (const p of this.procs) {
      p.removeAllListeners('exit');
      try {
        process.kill(-p.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await Promise.all(exits);
    await rm(this.dir, { recursive: true, force: true });
  }
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

function summary(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  return `p50 ${quantile(s, 0.5).toFixed(2)} ms, p99 ${quantile(s, 0.99).toFixed(2)} ms, max ${s[s.length - 1]!.toFixed(2)} ms (n=${s.length})`;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const kinds: { name: string; bridge?: string }[] = [{ name: 'in-process (new)' }];
  if (opts.oldBridge) kinds.push({ name: 'ipykernel (old)', bridge: opts.oldBridge });
  console.log(
    `code-engine: ${opts.python}, ${opts.starts} starts, ${opts.runs} warm runs each; ` +
      `${availableParallelism()} CPUs, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );

  const ready = new Map(kinds.map((k) => [k.name, [] as number[]]));
  const first = new Map(kinds.map((k) => [k.name, [] as number[]]));
  for (let i = 0; i < opts.starts; i++) {
    for (const k of i % 2 === 0 ? kinds : [...kinds].reverse()) {
      const t0 = performance.now();
      const engine = await Engine.start(opts.python, k.bridge);
      await engine.ready;
      ready.get(k.name)!.push(performance.now() - t0);
      await engine.run('1+1');
      first.get(k.name)!.push(performance.now() - t0);
      await engine.stop();
    }
  }

  const engines = await Promise.all(kinds.map((k) => Engine.start(opts.python, k.bridge)));
  await Promise.all(engines.map((e) => e.ready));
  const warm = kinds.map(() => [] as number[]);
  for (let i = 0; i < WARMUP + opts.runs; i++) {
    for (const [j, engine] of engines.entries()) {
      const t0 = performance.now();
      await engine.run('1+1');
      if (i >= WARMUP) warm[j]!.push(performance.now() - t0);
    }
  }
  await Promise.all(engines.map((e) => e.stop()));

  for (const [j, k] of kinds.entries()) {
    console.log(`${k.name}:`);
    console.log(`  new context, spawn to ready:        ${summary(ready.get(k.name)!)}`);
    console.log(`  new context, spawn to first 1+1:    ${summary(first.get(k.name)!)}`);
    console.log(`  warm 1+1:                           ${summary(warm[j]!)}`);
  }
}

await main();
