/**
 * Stand-ins for what lies outside a cluster, on the local node only: a cloud metadata service and a
 * DNS server outside the cluster, served from a network namespace the test creates (so nothing
 * real is ever probed), and the UDP DNS probe of the isolation spec. On the local cluster a stand-in
 * that cannot start is an error, never a reason to pass.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';

import { PROBE_TIMEOUT_S } from './matrix.js';

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
 * TCP and UDP 53 (answering every datagram) on the DNS stand-in. Needs root and iproute2's `ip`
 * on the local node; `make cluster-down` removes what a killed run leaves.
 */
export class StandIns {
  private server?: ChildProcess;

  /** Starts the servers; throws with the reason when they cannot start (not root, no `ip`, ...). */
  async start(): Promise<void> {
    this.stop();
    try {
      await this.startServers();
    } catch (err) {
      this.stop();
      throw new Error(
        `the isolation stand-ins could not start on this machine (they need root and iproute2's ip): ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  private async startServers(): Promise<void> {
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
      this.server!.once('error', reject);
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

/**
 * A UDP DNS query (A example.com) to `server`:`port` (53) over a connected socket (so an ICMP reject shows as
 * "Connection refused"), bounded by the probe timeout. Prints one line in the matrix's format
 * (`name<TAB>code<TAB>message`: 0 answered, 124 timed out, 1 and the error otherwise), so
 * parseProbes reads it. No heredoc: it runs in read-only control pods too.
 */
export function udpDnsProbe(name: string, server: string, port = 53): string {
  const py = [
    'import socket, sys',
    's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
    `s.settimeout(${PROBE_TIMEOUT_S})`,
    'q = bytes.fromhex("123401000001000000000000076578616d706c6503636f6d0000010001")',
    'try:',
    `    s.connect(("${server}", ${port})); s.send(q); s.recv(512); r = "0\\tanswered"`,
    'except socket.timeout:',
    '    r = "124\\ttimed out"',
    'except OSError as e:',
    '    r = "1\\t" + str(e.strerror)',
    `print("${name}\\t" + r)`,
  ].join('\n');
  return `python3 -c '${py}'`;
}
