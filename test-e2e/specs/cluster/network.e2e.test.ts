import net from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  containerTerminated,
  createTestNamespace,
  kubeClients,
  kubectl,
  podReady,
  testboxPod,
  waitForPod,
} from '../../src/framework/index.js';
import type { TestNamespace } from '../../src/framework/index.js';
import { itOnLocal } from '../../src/framework/not-run.js';

const ECHO_PORT = 7000;
/** Host-to-pod reachability is a property of the local node, not of any cluster. */

/** Connects to host:port, sends a line and resolves with what came back before the socket closed. */
function echoOverTcp(host: string, port: number, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = net.connect({ host, port, timeout: 5_000 });
    socket.on('connect', () => socket.write(line));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString();
      if (received.includes('\n')) socket.end();
    });
    socket.on('timeout', () => socket.destroy(new Error(`no answer from ${host}:${port} within 5 s`)));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
  });
}

/** Bash in a pod: connect to host:port, send a line, print the first line of the answer. */
function bashEcho(host: string, port: number): string {
  return `exec 3<>/dev/tcp/${host}/${port} && echo ping >&3 && read -t 5 line <&3 && echo "$line"`;
}

describe('pod networking (bridge CNI + kube-proxy)', () => {
  const { core } = kubeClients();
  let ns: TestNamespace;
  let echoIP = '';

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'net' });
    const echo = testboxPod('echo', ['netecho', String(ECHO_PORT)], (p) => {
      p.spec!.containers[0]!.readinessProbe = { tcpSocket: { port: ECHO_PORT }, periodSeconds: 1 };
    });
    await core.createNamespacedPod({ namespace: ns.name, body: echo });
    await core.createNamespacedPod({ namespace: ns.name, body: testboxPod('client', ['sleep', '3600']) });
    await core.createNamespacedService({
      namespace: ns.name,
      body: {
        metadata: { name: 'echo' },
        spec: { selector: { app: 'echo' }, ports: [{ port: 80, targetPort: ECHO_PORT }] },
      },
    });
    echoIP = (await waitForPod(core, { namespace: ns.name, name: 'echo' }, podReady)).status?.podIP ?? '';
    await waitForPod(core, { namespace: ns.name, name: 'client' }, podReady);
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it('gives pods addresses from the pod range 198.18.0.0/16', () => {
    expect(echoIP).toMatch(/^198\.18\.\d+\.\d+$/);
  });

  itOnLocal('lets the host open a TCP connection to a pod IP', async () => {
    await expect(echoOverTcp(echoIP, ECHO_PORT, 'from-host\n')).resolves.toBe('from-host\n');
  });

  it('lets one pod reach another by pod IP', async () => {
    const res = await kubectl([
      'exec',
      '-n',
      ns.name,
      'client',
      '--',
      'bash',
      '-c',
      bashEcho(echoIP, ECHO_PORT),
    ]);
    expect(res.stderr).toBe('');
    expect(res.stdout).toBe('ping\n');
  });

  it('lets a pod reach another through a ClusterIP Service (kube-proxy iptables rules)', async () => {
    const svc = await core.readNamespacedService({ namespace: ns.name, name: 'echo' });
    const clusterIP = svc.spec?.clusterIP ?? '';
    expect(clusterIP).toMatch(/^198\.19\.\d+\.\d+$/);
    // kube-proxy programs the rules once the EndpointSlice lists the ready pod: retry briefly.
    let last = { status: null as number | null, stdout: '', stderr: '' };
    for (let attempt = 0; attempt < 20 && last.stdout !== 'ping\n'; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 500));
      last = await kubectl(['exec', '-n', ns.name, 'client', '--', 'bash', '-c', bashEcho(clusterIP, 80)]);
    }
    expect(last.stdout).toBe('ping\n');
  });

  it('lets a pod call the API server through the kubernetes Service with its ServiceAccount token', async () => {
    // The in-cluster path the operator and gateway use: 198.19.0.1:443 -> the API server on the
    // node address, TLS verified against the pod's CA bundle, authenticated by the pod's token.
    const script = [
      "const fs = require('fs'), https = require('https');",
      "const dir = '/var/run/secrets/kubernetes.io/serviceaccount';",
      'https.get({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT,',
      "  path: '/version', ca: fs.readFileSync(dir + '/ca.crt'),",
      "  headers: { Authorization: 'Bearer ' + fs.readFileSync(dir + '/token', 'utf8') } }, (res) => {",
      "  let body = ''; res.on('data', (c) => (body += c));",
      "  res.on('end', () => { console.log(res.statusCode, JSON.parse(body).gitVersion); }); })",
      "  .on('error', (e) => { console.log('ERROR', e.message); process.exit(1); });",
    ].join('\n');
    const pod = testboxPod('in-cluster', ['node', '-e', script], (p) => {
      p.spec!.automountServiceAccountToken = true;
      p.spec!.containers[0]!.image = 'localhost/sandbox-platform/sandbox-agent:dev';
    });
    await core.createNamespacedPod({ namespace: ns.name, body: pod });
    await waitForPod(core, { namespace: ns.name, name: 'in-cluster' }, containerTerminated('Completed'));
    const logs = await kubectl(['logs', '-n', ns.name, 'in-cluster']);
    expect(logs.stdout).toMatch(/^200 v\d+\.\d+\.\d+/);
  });
});
