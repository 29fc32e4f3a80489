/**
 * bench-egress (docs/benchmarks.md, "bench-egress"): HTTP request latency (p50/p90/p99 of
 * sequential keep-alive GETs) and throughput (16 at a time) to a test upstream, directly and
 * through an egress proxy, side by side in one run.
 *
 * `--mode loopback` (default): upstream, proxies and load generator are separate processes on
 * this machine: direct, this project's egress proxy (rules checked, audit records written to a
 * temp dir), the floor of a forward proxy in Node (nodeFloor: forward and pipe, nothing else) and,
 * when installed, Squid (`squid` from Debian; one dstdomain ACL, no cache, no access log) as the
 * measured alternative (ADR 0034).
 * `--mode cluster`: from a sandbox of the local platform to an in-cluster upstream (cluster.ts).
 *
 * Goal (issue 30): through the proxy p50 overhead <= 1 ms and throughput >= 0.8x of direct.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

import { AuditQueue } from '../src/audit/queue.js';
import { AuditStore } from '../src/audit/store.js';
import { blockList, filteringLookup } from '../src/dial.js';
import { EgressProxy } from '../src/proxy.js';
import type { EgressRule } from '../src/rules.js';

const args = process.argv.slice(2);
const arg = (name: string, def: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : def;
};
/** What load.mjs measures (`requests`: all it sent, warm-up included), and the proxy's CPU per request. */
export type Stats = Record<'p50' | 'p90' | 'p99' | 'rps', number> & { requests?: number; cpuUs?: number };

const LOAD = join(import.meta.dirname, '..', '..', '..', 'egress-proxy', 'bench', 'load.mjs');

/** Child roles: this bundle run again as the upstream or the proxy. */
function role(name: string): void {
  if (name === 'upstream') {
    const body = Buffer.alloc(Number(arg('body', '512')), 'x');
    const server = createServer({ keepAliveTimeout: 60_000 }, (_req, res) => res.end(body));
    server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port));
    return;
  }
  const upstreamPort = Number(arg('upstream-port', '0'));
  if (name === 'node-floor') return nodeFloor(upstreamPort);
  const lookup = filteringLookup(blockList([]), ((
    _h: string,
    _o: unknown,
    cb: (e: null, a: unknown) => void,
  ) => cb(null, [{ address: '127.0.0.1', family: 4 }])) as never);
  const dir = mkdtempSync(join(tmpdir(), 'bench-egress-audit-'));
  const store = new AuditStore({
    dir,
    key: Buffer.alloc(32, 1),
    retentionSeconds: 3600,
    maxRecordsPerSession: 10_000_000,
  });
  const queue = new AuditQueue(
    (e) => store.append(e),
    (err) => console.error(err),
  );
  const session = { namespace: 'bench', name: 'bench', uid: 'u' };
  // One array while the rules are unchanged, as the session index returns (kube/session-index.ts).
  const rules: EgressRule[] = [{ host: 'upstream.test', ports: [upstreamPort] }];
  const proxy = new EgressProxy({
    sessions: { byAddress: () => session, rules: () => rules },
    audit: (e) => queue.push(e),
    lookup,
    httpAgent: new Agent({ keepAlive: true, maxFreeSockets: 64, lookup }),
    httpsAgent: new HttpsAgent({ keepAlive: true, lookup }),
    secrets: { read: () => Promise.reject(new Error('none')) },
    timeoutMs: 30_000,
    helloTimeoutMs: 10_000,
    maxTunnelsPerSession: 256,
  });
  proxy.server.listen(0, '127.0.0.1', () => console.log((proxy.server.address() as AddressInfo).port));
  process.on('SIGTERM', () => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
}

/**
 * The floor of a forward proxy written in Node: absolute-form requests forwarded to the upstream
 * over a keep-alive pool, the answer piped back; no rules, no audit, no header filtering. What our
 * proxy costs over it is ours; what it costs over direct is Node's HTTP on both sides.
 */
function nodeFloor(upstreamPort: number): void {
  const agent = new Agent({ keepAlive: true, maxFreeSockets: 64 });
  const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const url = new URL(req.url ?? '/');
    const up = httpRequest(
      {
        host: '127.0.0.1',
        port: upstreamPort,
        path: url.pathname,
        method: req.method,
        headers: req.headers,
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port));
}

function child(cmd: string, argv: string[]): Promise<{ proc: ChildProcess; line: string }> {
  const proc = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.stdout.once('data', (d: Buffer) => resolve({ proc, line: d.toString().trim() }));
  });
}

/** User + system CPU of a process so far, us (/proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuUs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/** load(), with the CPU the proxy process `pid` spent per request meanwhile. */
async function loadVia(
  pid: number | undefined,
  ...a: [url: string, proxy: string, n: number, conc: number, seconds: number]
): Promise<Stats> {
  const before = cpuUs(pid);
  const stats = await load(...a);
  const used = cpuUs(pid) - before;
  return { ...stats, cpuUs: stats.requests ? used / stats.requests : NaN };
}

function load(url: string, proxy: string, n: number, conc: number, seconds: number): Promise<Stats> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [LOAD, url, proxy, String(n), String(conc), String(seconds)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.once('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as Stats)
        : reject(new Error(`load ${url} via ${proxy} exited ${code}`)),
    );
  });
}

async function startSquid(
  upstreamPort: number,
): Promise<{ proc: ChildProcess; port: number; dir: string } | undefined> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-squid-'));
  chmodSync(dir, 0o777); // squid drops to its own user (proxy) and writes its pid and log there
  const port = 20000 + Math.floor(Math.random() * 20000);
  writeFileSync(join(dir, 'hosts'), '127.0.0.1 upstream.test\n');
  writeFileSync(
    join(dir, 'squid.conf'),
    [
      `http_port 127.0.0.1:${port}`,
      `hosts_file ${dir}/hosts`,
      'acl allowed dstdomain upstream.test',
      `acl upport port ${upstreamPort}`,
      'http_access allow localhost allowed upport',
      'http_access deny all',
      'cache deny all',
      'cache_mem 0 MB',
      'access_log none',
      `cache_log ${dir}/cache.log`,
      `pid_filename ${dir}/squid.pid`,
      `coredump_dir ${dir}`,
      'shutdown_lifetime 0 seconds',
      'workers 1',
      '',
    ].join('\n'),
  );
  const proc = spawn('squid', ['-N', '-f', join(dir, 'squid.conf')], { stdio: 'ignore', detached: false });
  const ok = await new Promise<boolean>((resolve) => {
    proc.once('error', () => resolve(false));
    setTimeout(() => resolve(true), 1500);
  });
  return ok ? { proc, port, dir } : undefined;
}

async function loopback(): Promise<void> {
  const n = Number(arg('n', '2000'));
  const conc = Number(arg('conc', '16'));
  const seconds = Number(arg('seconds', '5'));
  const rounds = Number(arg('rounds', '2'));
  const paths = new Set(arg('paths', 'direct,egress-proxy,node-floor,squid').split(','));
  const self = process.argv[1]!;
  const up = await child(process.execPath, [self, '--role', 'upstream']);
  const upPort = Number(up.line);
  // --prof-dir: a CPU profile of our proxy's process (node --cpu-prof), written when it stops.
  const prof = arg('prof-dir', '');
  const ours = await child(process.execPath, [
    ...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : []),
    self,
    '--role',
    'proxy',
    '--upstream-port',
    String(upPort),
  ]);
  const floor = await child(process.execPath, [
    self,
    '--role',
    'node-floor',
    '--upstream-port',
    String(upPort),
  ]);
  const squid = paths.has('squid') ? await startSquid(upPort) : undefined;
  const load0 = loadavg();
  const url = `http://upstream.test:${upPort}/`;
  const rows: Array<{ path: string; round: number } & Stats> = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      if (paths.has('direct'))
        rows.push({
          path: 'direct',
          round,
          ...(await load(`http://127.0.0.1:${upPort}/`, '-', n, conc, seconds)),
        });
      if (paths.has('egress-proxy'))
        rows.push({
          path: 'egress-proxy',
          round,
          ...(await loadVia(ours.proc.pid, url, `127.0.0.1:${ours.line}`, n, conc, seconds)),
        });
      if (paths.has('node-floor'))
        rows.push({
          path: 'node-floor',
          round,
          ...(await loadVia(floor.proc.pid, url, `127.0.0.1:${floor.line}`, n, conc, seconds)),
        });
      if (squid)
        rows.push({
          path: 'squid',
          round,
          ...(await loadVia(squid.proc.pid, url, `127.0.0.1:${squid.port}`, n, conc, seconds)),
        });
    }
  } finally {
    up.proc.kill();
    ours.proc.kill('SIGTERM');
    floor.proc.kill();
    squid?.proc.kill('SIGKILL');
    if (squid) rmSync(squid.dir, { recursive: true, force: true });
  }
  const load1 = loadavg();
  report(rows);
  console.log(
    `load average (1 min) at the start ${load0[0]!.toFixed(2)}, at the end ${load1[0]!.toFixed(2)}`,
  );
}

/** Prints every run and the medians per path with their ratios to direct. */
export function report(rows: Array<{ path: string } & Stats>): void {
  for (const r of rows) {
    console.log(
      `${r.path.padEnd(13)} p50 ${r.p50.toFixed(3)} ms  p90 ${r.p90.toFixed(3)}  p99 ${r.p99.toFixed(3)}  ${r.rps.toFixed(0)} req/s` +
        (r.cpuUs === undefined ? '' : `  proxy CPU ${r.cpuUs.toFixed(0)} us/req`),
    );
  }
  const med = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  const by = (path: string, k: 'p50' | 'p90' | 'p99' | 'rps'): number =>
    med(rows.filter((r) => r.path === path).map((r) => r[k]));
  const d50 = by('direct', 'p50');
  const drps = by('direct', 'rps');
  for (const path of [...new Set(rows.map((r) => r.path))].filter((p) => p !== 'direct')) {
    const cpu = rows.filter((r) => r.path === path && r.cpuUs !== undefined).map((r) => r.cpuUs!);
    if (cpu.length > 0) console.log(`${path}: proxy CPU per request (median) ${med(cpu).toFixed(0)} us`);
    if (!rows.some((r) => r.path === 'direct')) continue;
    const over = by(path, 'p50') - d50;
    const ratio = by(path, 'rps') / drps;
    console.log(
      `${path}: p50 overhead ${over.toFixed(3)} ms (goal <= 1 ms: ${over <= 1 ? 'met' : 'MISSED'}), ` +
        `throughput ${ratio.toFixed(2)}x direct (goal >= 0.8x: ${ratio >= 0.8 ? 'met' : 'MISSED'})`,
    );
  }
  if (rows.some((r) => r.path === 'node-floor') && rows.some((r) => r.path === 'egress-proxy')) {
    const over = by('egress-proxy', 'p50') - by('node-floor', 'p50');
    const ratio = by('egress-proxy', 'rps') / by('node-floor', 'rps');
    console.log(
      `egress-proxy vs the Node floor: p50 +${over.toFixed(3)} ms, throughput ${ratio.toFixed(2)}x` +
        (rows.some((r) => r.path === 'direct')
          ? ` (the floor itself ${(by('node-floor', 'rps') / drps).toFixed(2)}x direct)`
          : ''),
    );
  }
}

const r = arg('role', '');
if (r) role(r);
else if (arg('mode', 'loopback') === 'cluster') await (await import('./cluster.js')).cluster(arg, report);
else await loopback();
