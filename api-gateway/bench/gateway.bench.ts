/**
 * Exec of `true`: p50/p99 latency (sequential) and requests/second (concurrent) through the
 * gateway, side by side with direct calls to the agent, with a trivial Node proxy in front of the
 * agent (one naive extra HTTP hop: bench/trivial-proxy.ts), with a TCP relay that parses nothing
 * (the floor of any process in the path: bench/tcp-pipe.ts), with the floors of a raw-socket HTTP
 * hop, a node:http hop and a fastify hop (bench/http-floor.ts) and with pods/exec (the
 * KubernetesExec transport) in the same run. The modes are measured interleaved (stats.ts) so
 * load drift on a shared machine hits all of them alike. Goals: gateway p50 <= 1.2x direct; Agent
 * >= 10x faster than KubernetesExec at p50. Not a test: it prints raw figures and ratios.
 *
 *   node bench/run.mjs [--local [--split]] [--iterations N] [--warmup N] [--concurrency N]
 *                      [--seconds N] [--rounds N] [--kexec-iterations N]
 *
 * Cluster mode (default) needs a deployed gateway and a node: BENCH_GATEWAY_URL (or
 * E2E_GATEWAY_URL), BENCH_GATEWAY_API_KEY (or E2E_GATEWAY_API_KEY), BENCH_NAMESPACE (or
 * E2E_NAMESPACE, default sandbox-e2e), KUBECONFIG (default .localkube/kubeconfig); the pod network
 * must be reachable from this process (direct mode). --local runs gateway, trivial proxy and agent
 * in this process, --local --split each in its own process (local-setup.ts).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';

import { execTrueCall, hostPort } from './agent-call.js';
import { clusterSetup } from './cluster-setup.js';
import { localSetup, serveRole, spawnRole } from './local-setup.js';
import { REFERENCES } from './references.js';
import { measureInterleaved, report, type ModeSpec } from './stats.js';

const { values } = parseArgs({
  options: {
    local: { type: 'boolean', default: false },
    split: { type: 'boolean', default: false },
    serve: { type: 'string' },
    'agent-host': { type: 'string', default: '127.0.0.1' },
    'agent-port': { type: 'string', default: '0' },
    iterations: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '10' },
    'kexec-iterations': { type: 'string', default: '100' },
  },
});
const opts = {
  iterations: Number(values.iterations),
  warmup: Number(values.warmup),
  concurrency: Number(values.concurrency),
  durationMs: Number(values.seconds) * 1000,
  rounds: Number(values.rounds),
};
// pods/exec costs tens of milliseconds per call: fewer samples keep the run short.
const kexecOpts = { iterations: Number(values['kexec-iterations']), warmup: 5 };

function spec(
  mode: string,
  call: () => Promise<void>,
  o: { iterations: number; warmup: number } = opts,
): ModeSpec {
  return { mode, call, iterations: o.iterations, warmup: o.warmup };
}

function env(...names: string[]): string | undefined {
  for (const n of names) if (process.env[n]) return process.env[n];
  return undefined;
}

function gatewayCall(
  url: string,
  apiKey: string,
  session: string,
  namespace?: string,
): ReturnType<typeof execTrueCall> {
  const query = namespace ? `?namespace=${encodeURIComponent(namespace)}` : '';
  return execTrueCall({ ...hostPort(url), path: `/v1/sessions/${session}/exec${query}`, token: apiKey });
}

/** A client per reference, its mode name, and its ratio line against `direct`. */
function referenceModes(
  urls: Record<string, string>,
  agentToken: string,
  to: string,
  direct: string,
): Array<{ client: ReturnType<typeof execTrueCall>; spec: ModeSpec; ratio: [string, string, string] }> {
  return REFERENCES.map((r) => {
    const mode = `${r.label} -> ${to}`;
    const token = r.callerSendsToken ? agentToken : '';
    const client = execTrueCall({ ...hostPort(urls[r.role]!), path: '/v1/exec', token });
    return {
      client,
      spec: spec(mode, client.call),
      ratio: [`${r.label} / direct (${r.means})`, mode, direct],
    };
  });
}

async function runLocal(split: boolean): Promise<void> {
  const s = await localSetup({ split });
  const DIRECT = 'direct agent (loopback)';
  const GATEWAY = 'gateway -> agent (loopback)';
  const direct = execTrueCall({ ...s.agentUrl, path: '/v1/exec' });
  const refs = referenceModes(s.references, s.agentUrl.token, 'agent', DIRECT);
  const gateway = gatewayCall(s.gatewayUrl, s.apiKey, s.session);
  try {
    const rows = await measureInterleaved(
      [spec(DIRECT, direct.call), ...refs.map((r) => r.spec), spec(GATEWAY, gateway.call)],
      opts,
    );
    report(rows, [
      ['gateway / direct', GATEWAY, DIRECT],
      ...refs.map((r) => r.ratio),
      ['gateway / fastify floor', GATEWAY, 'fastify floor -> agent'],
    ]);
  } finally {
    for (const c of [direct, gateway, ...refs.map((r) => r.client)]) c.close();
    await s.close();
  }
}

async function runCluster(): Promise<void> {
  const gatewayUrl = env('BENCH_GATEWAY_URL', 'E2E_GATEWAY_URL');
  const apiKey = env('BENCH_GATEWAY_API_KEY', 'E2E_GATEWAY_API_KEY');
  if (!gatewayUrl || !apiKey)
    throw new Error('set BENCH_GATEWAY_URL and BENCH_GATEWAY_API_KEY (or run with --local)');
  const namespace = env('BENCH_NAMESPACE', 'E2E_NAMESPACE') ?? 'sandbox-e2e';
  const kubeconfig = env('KUBECONFIG') ?? '.localkube/kubeconfig';
  const s = await clusterSetup({ gatewayUrl, apiKey, namespace, kubeconfig });
  // Each reference in its own process on this host, as the gateway is in its own pod: an extra
  // process on the path, like any proxy.
  const servers = await Promise.all(REFERENCES.map((r) => spawnRole<{ url: string }>(r.role, s.direct)));
  const urls = Object.fromEntries(REFERENCES.map((r, i) => [r.role, servers[i]!.url]));
  const DIRECT = 'direct agent (podIP:8090)';
  const AGENT = 'gateway, Agent';
  const KEXEC = 'gateway, KubernetesExec';
  const POD_EXEC = 'pods/exec, same pod';
  const direct = execTrueCall({ ...s.direct, path: '/v1/exec' });
  const refs = referenceModes(urls, s.direct.token, 'podIP', DIRECT);
  const viaAgent = gatewayCall(gatewayUrl, apiKey, s.agentSession, namespace);
  const viaKexec = gatewayCall(gatewayUrl, apiKey, s.kexecSession, namespace);
  try {
    const rows = await measureInterleaved(
      [
        spec(DIRECT, direct.call),
        ...refs.map((r) => r.spec),
        spec(AGENT, viaAgent.call),
        spec(POD_EXEC, s.podExec, kexecOpts),
        spec(KEXEC, viaKexec.call, kexecOpts),
      ],
      opts,
    );
    report(rows, [
      ['gateway Agent / direct agent', AGENT, DIRECT],
      ...refs.map((r) => r.ratio),
      ['gateway Agent / fastify floor', AGENT, 'fastify floor -> podIP'],
      ['pods/exec / direct agent (same pod)', POD_EXEC, DIRECT],
      ['gateway KubernetesExec / gateway Agent', KEXEC, AGENT],
    ]);
  } finally {
    for (const c of [direct, viaAgent, viaKexec, ...refs.map((r) => r.client)]) c.close();
    for (const r of servers) await r.close();
    await s.close();
  }
}

if (values.serve !== undefined) {
  // A child process of the split local mode.
  await serveRole(values.serve, { host: values['agent-host'], port: Number(values['agent-port']) });
} else {
  const mode = values.local
    ? values.split
      ? 'local split (one process each)'
      : 'local (one process)'
    : 'cluster';
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(`gateway bench: ${mode} mode, ${JSON.stringify(opts)}, load average ${load}`);
  await (values.local ? runLocal(values.split) : runCluster());
}
