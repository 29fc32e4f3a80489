/**
 * Helpers of the isolation e2e specs: sessions created through the Kubernetes API (so a spec can
 * ask for a RuntimeClass, which the gateway API does not take), the connection matrix run from
 * inside a session, and the stand-in servers outside the cluster.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';

import * as k8s from '@kubernetes/client-node';
import {
  ANNOTATIONS,
  API_VERSION,
  CONDITIONS,
  GROUP,
  KIND,
  PLURAL,
  VERSION,
  type SandboxSession,
} from '@sandbox-platform/api';

import { SandboxClient } from '@sandbox-platform/client';
import { isNotFound, type KubeClients } from '../../src/framework/index.js';
import { notRun } from '../../src/framework/not-run.js';
import { predicate, waitFor } from '../../src/framework/wait-for.js';

export const AGENT_IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
export const READY_TIMEOUT_MS = 180_000;
/** The RuntimeClass localkube registers for gVisor (test-e2e/localkube/gvisor.go). */
export const GVISOR = 'gvisor';

/** A gateway client for one tenant: E2E_GATEWAY_API_KEY (E2E_NAMESPACE) or E2E_OTHER_API_KEY. */
export function gatewayClient(tenant: 'e2e' | 'other' = 'e2e'): SandboxClient {
  const baseUrl = process.env.E2E_GATEWAY_URL;
  const apiKey = tenant === 'e2e' ? process.env.E2E_GATEWAY_API_KEY : process.env.E2E_OTHER_API_KEY;
  if (!baseUrl || !apiKey) {
    throw new Error(
      'isolation specs need E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY and E2E_OTHER_API_KEY (make platform-up writes them)',
    );
  }
  return new SandboxClient({ baseUrl, apiKey, namespace: namespaceOf(tenant), retry: { retries: 0 } });
}

export function namespaceOf(tenant: 'e2e' | 'other'): string {
  return tenant === 'e2e'
    ? (process.env.E2E_NAMESPACE ?? 'sandbox-e2e')
    : (process.env.E2E_OTHER_NAMESPACE ?? 'sandbox-e2e-other');
}

/** A unique session name with a readable prefix. */
export const uniqueName = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;

/** What a spec asks of a session it creates. */
export interface SessionOptions {
  runtimeClassName?: string;
  execTransport?: 'Agent' | 'KubernetesExec';
}

/**
 * Creates a SandboxSession through the Kubernetes API, as the gateway would (same annotation of
 * the creating key), and waits until it is Ready with a pod IP. Returns the session.
 */
export async function createSession(
  kube: KubeClients,
  namespace: string,
  name: string,
  opts: SessionOptions = {},
): Promise<SandboxSession> {
  const body: SandboxSession = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace, annotations: { [ANNOTATIONS.createdByKey]: 'e2e' } },
    spec: { image: AGENT_IMAGE, idleTimeoutSeconds: 1800, ...opts },
  };
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: PLURAL,
    body,
  });
  return waitFor(
    async () =>
      (await kube.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name,
      })) as SandboxSession,
    predicate(`SandboxSession ${namespace}/${name} Ready=True with a pod IP`, (s: SandboxSession) => {
      const ready = s.status?.conditions?.find((c) => c.type === CONDITIONS.ready);
      return ready?.status === 'True' && Boolean(s.status?.podIP);
    }),
    { timeoutMs: READY_TIMEOUT_MS, intervalMs: 1000 },
  );
}

/** Deletes a session; a session already gone is fine. */
export async function deleteSession(kube: KubeClients, namespace: string, name: string): Promise<void> {
  try {
    await kube.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      name,
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Whether the cluster has the RuntimeClass (any cluster may lack gVisor). */
export async function hasRuntimeClass(kc: k8s.KubeConfig, name: string): Promise<boolean> {
  try {
    await kc.makeApiClient(k8s.NodeV1Api).readRuntimeClass({ name });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** One cell of the connection matrix: a TCP connection attempt from inside a session. */
export interface Cell {
  name: string;
  host: string;
  port: number;
}

/** A cell's outcome: `open` (connected) or `closed` (refused: exit 1, timed out: exit 124). */
export interface CellResult extends Cell {
  outcome: 'open' | 'closed';
  exitCode: number;
}

/**
 * One shell script that tries every cell at once, each a real connection attempt bounded by
 * 3 s (`timeout 3 bash -c 'exec 3<>/dev/tcp/HOST/PORT'`), printing `name open` or
 * `name closed:CODE` per line.
 */
export function matrixScript(cells: Cell[]): string {
  const lines = cells.map(
    (c) =>
      `( if timeout 3 bash -c 'exec 3<>/dev/tcp/${c.host}/${c.port}' 2>/dev/null; ` +
      `then echo '${c.name} open'; else echo "${c.name} closed:$?"; fi ) &`,
  );
  return [...lines, 'wait'].join('\n');
}

/** Parses matrixScript's output; a cell with no line is an error (the script did not run). */
export function parseMatrix(cells: Cell[], stdout: string): CellResult[] {
  const byName = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const [name, result] = line.trim().split(' ');
    if (name && result) byName.set(name, result);
  }
  return cells.map((c) => {
    const result = byName.get(c.name);
    if (result === undefined) throw new Error(`matrix: no result for ${c.name} in:\n${stdout}`);
    const exitCode = result === 'open' ? 0 : Number(result.split(':')[1]);
    return { ...c, outcome: result === 'open' ? 'open' : 'closed', exitCode };
  });
}

/** The matrix as a table for the test log (and the report). */
export function formatMatrix(title: string, results: CellResult[]): string {
  const rows = results.map(
    (r) =>
      `  ${r.name.padEnd(30)} ${`${r.host}:${r.port}`.padEnd(24)} ${r.outcome === 'open' ? 'OPEN' : `closed (${r.exitCode === 124 ? 'timed out' : `exit ${r.exitCode}`})`}`,
  );
  return [title, ...rows].join('\n');
}

/** Addresses of the stand-in servers (owned by this machine: assigned to our own netns). */
export const STANDIN = {
  netns: 'lk-e2e-isolation',
  hostVeth: 'lkst0',
  hostAddr: '169.254.77.1',
  /** Stand-in for a cloud metadata service: link-local, but never 169.254.169.254. */
  metadata: '169.254.77.2',
  /** Stand-in for a DNS server outside the cluster: TEST-NET-1 (RFC 5737). */
  dns: '192.0.2.53',
} as const;

/**
 * Test servers in a network namespace this process creates: TCP 80 on the metadata stand-in,
 * TCP and UDP 53 (answering every datagram) on the DNS stand-in. Only on the local node as root
 * (iproute2's `ip netns`); `make cluster-down` removes what a killed run leaves.
 */
export class StandIns {
  private server?: ChildProcess;

  static supported(): boolean {
    return !process.env.E2E_KUBECONFIG && process.getuid?.() === 0 && existsSync('/usr/sbin/ip');
  }

  async start(): Promise<void> {
    this.stop();
    const ns = STANDIN.netns;
    const ip = (...args: string[]): void => void execFileSync('ip', args, { stdio: 'pipe' });
    ip('netns', 'add', ns);
    ip('link', 'add', STANDIN.hostVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
    ip('addr', 'add', `${STANDIN.hostAddr}/30`, 'dev', STANDIN.hostVeth);
    ip('link', 'set', STANDIN.hostVeth, 'up');
    ip('-n', ns, 'addr', 'add', `${STANDIN.metadata}/30`, 'dev', 'eth0');
    ip('-n', ns, 'addr', 'add', `${STANDIN.dns}/32`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    ip('-n', ns, 'route', 'add', 'default', 'via', STANDIN.hostAddr);
    ip('route', 'add', `${STANDIN.dns}/32`, 'via', STANDIN.metadata, 'dev', STANDIN.hostVeth);
    this.server = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', STANDIN_SERVER], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('exit', (code) => reject(new Error(`stand-in servers exited (${code})`)));
      this.server!.stdout!.once('data', () => resolve());
    });
  }

  /** Stops the servers and removes the namespace, its veth pair and the route. */
  stop(): void {
    this.server?.kill('SIGKILL');
    this.server = undefined;
    for (const args of [
      ['route', 'del', `${STANDIN.dns}/32`],
      ['link', 'del', STANDIN.hostVeth],
      ['netns', 'del', STANDIN.netns],
    ]) {
      try {
        execFileSync('ip', args, { stdio: 'pipe' });
      } catch {
        // absent already (first start, or removed with the namespace)
      }
    }
  }
}

/** The stand-in servers' program (run by node inside the namespace); prints "up" when listening. */
const STANDIN_SERVER = `
const net = require('node:net'), dgram = require('node:dgram');
// A client that connects and closes at once resets the connection: ignore that, never crash.
const tcp = (host, port) => new Promise((ok) => net.createServer((s) => { s.on('error', () => {}); s.end('stand-in\\n'); }).listen(port, host, ok));
const udp = dgram.createSocket('udp4');
udp.on('message', (msg, rinfo) => { const r = Buffer.from(msg); if (r.length > 2) r[2] |= 0x80; udp.send(r, rinfo.port, rinfo.address); });
Promise.all([tcp('${STANDIN.metadata}', 80), tcp('${STANDIN.dns}', 53), new Promise((ok) => udp.bind(53, '${STANDIN.dns}', ok))])
  .then(() => process.stdout.write('up\\n'));
`;

/** A UDP DNS query (A example.com) from inside a session, 3 s bound: prints `answered` or `timeout`. */
export function udpDnsProbe(server: string): string {
  return [
    "python3 - <<'EOF'",
    'import socket',
    's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
    's.settimeout(3)',
    "q = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'",
    'try:',
    `    s.sendto(q, ('${server}', 53))`,
    '    s.recvfrom(512)',
    "    print('answered')",
    'except OSError:',
    "    print('timeout')",
    'EOF',
  ].join('\n');
}

/** A container runtime the runtime-parameterized specs run under. */
export interface RuntimeUnderTest {
  /** Label in test names. */
  label: string;
  /** spec.runtimeClassName of the sessions (none: the cluster's default, runc). */
  runtimeClassName?: string;
}

/**
 * Why the cluster cannot run gVisor sessions (E2E_GVISOR=0, or no RuntimeClass gvisor), or
 * undefined when it can.
 */
export async function gvisorUnavailable(kc: k8s.KubeConfig): Promise<string | undefined> {
  if (process.env.E2E_GVISOR === '0') return 'gVisor switched off (E2E_GVISOR=0)';
  if (!(await hasRuntimeClass(kc, GVISOR))) return `the cluster has no RuntimeClass ${GVISOR}`;
  return undefined;
}

/**
 * The cluster's default runtime always; gVisor too when the cluster has RuntimeClass gvisor
 * (localkube registers it), unless E2E_GVISOR=0. The agent and gateway transport specs run once per
 * entry (describe.each); without gVisor its variants are recorded as NOT RUN in the e2e summary.
 */
export async function runtimesUnderTest(kc: k8s.KubeConfig): Promise<RuntimeUnderTest[]> {
  const runtimes: RuntimeUnderTest[] = [{ label: 'runc' }];
  const missing = await gvisorUnavailable(kc);
  if (missing === undefined) runtimes.push({ label: 'gVisor', runtimeClassName: GVISOR });
  else notRun('the gVisor variants of this file', missing);
  return runtimes;
}
