/**
 * Plays the kubelet for warm pool Pods on the control-plane-only cluster (docs/adr/0016): a real
 * sandbox agent per Pod, started in bind mode with the Pod's own identity and the operator's
 * public bind key, listening on a loopback address of its own (127.0.0.N) on one shared port
 * (the operator's POOL_AGENT_PORT), then the Pod's status patched to Ready with that address as
 * its IP. A Pod can be put behind a holding relay instead, which captures the bind request and
 * holds it until released (or drops it): the window in which tests kill the operator or delete
 * the session.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type * as k8s from '@kubernetes/client-node';
import { bindSigner, POOL_LABELS } from '@sandbox-platform/api';

import { agentConfig, startAgent, type RunningAgent } from '../../../../sandbox-agent/src/index.js';
import { runningReady, setPodStatus } from './sessions.js';

/** A relay that holds what the client sends until released. */
export interface HoldingRelay {
  /** Resolves with the client's bytes once a whole request arrived (headers and body). */
  readonly captured: Promise<Buffer>;
  /** Forwards what it holds (and everything after) to the agent. */
  release(): void;
  /** Closes every connection without forwarding anything. */
  drop(): void;
}

interface Warm {
  readonly agent: RunningAgent;
  readonly dir: string;
  readonly host: string;
  readonly server?: net.Server;
}

/** The warm agents of one test file. */
export class WarmAgents {
  /** POOL_AGENT_PORT of the operator under test. */
  readonly port = 20_000 + Math.floor(Math.random() * 20_000);
  private readonly agents = new Map<string, Warm>();
  private next: number;

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly namespace: string,
    private readonly masterKey: Buffer,
    firstHost = 100,
  ) {
    this.next = firstHost;
  }

  /** The warm Pods of a pool (controller: the pool) that exist now. */
  async warmPods(pool: string): Promise<k8s.V1Pod[]> {
    const list = await this.core.listNamespacedPod({
      namespace: this.namespace,
      labelSelector: `${POOL_LABELS.pool}=${pool}`,
    });
    return list.items.filter(
      (p) => p.metadata?.ownerReferences?.[0]?.kind === 'SandboxPool' && !p.metadata.deletionTimestamp,
    );
  }

  /** Starts an agent for every warm Pod of the pool without one, and reports it Ready. */
  async startWarm(pool: string): Promise<string[]> {
    const started: string[] = [];
    for (const pod of await this.warmPods(pool)) {
      const name = pod.metadata!.name!;
      if (this.agents.has(name)) continue;
      await this.start(pod);
      started.push(name);
    }
    return started;
  }

  /**
   * Starts the agent of a warm Pod behind a holding relay (the operator's bind waits in it), and
   * reports the Pod Ready.
   */
  async startHeld(pod: k8s.V1Pod): Promise<HoldingRelay> {
    const host = `127.0.0.${this.next++}`;
    const agent = await this.agentFor(pod, host, 0);
    let resolveCaptured!: (b: Buffer) => void;
    const captured = new Promise<Buffer>((resolve) => (resolveCaptured = resolve));
    const sockets: net.Socket[] = [];
    let released = false;
    const waiting: Array<() => void> = [];
    const server = net.createServer((client) => {
      sockets.push(client);
      const chunks: Buffer[] = [];
      const upstream = net.connect({ host, port: agent.port });
      sockets.push(upstream);
      const flush = (): void => {
        for (const c of chunks.splice(0)) upstream.write(c);
      };
      client.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        const text = Buffer.concat(chunks).toString('latin1');
        const head = text.indexOf('\r\n\r\n');
        const length = /content-length: (\d+)/i.exec(text)?.[1];
        if (head >= 0 && Buffer.byteLength(text.slice(head + 4), 'latin1') >= Number(length ?? 0))
          resolveCaptured(Buffer.concat(chunks));
        if (released) flush();
        else waiting.push(flush);
      });
      upstream.on('data', (chunk: Buffer) => client.write(chunk));
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      // A client gone before the release (the operator killed) still gets its request delivered
      // on release: the late bind the operator never saw answered.
      client.on('close', () => {
        if (released) upstream.end();
        else waiting.push(() => upstream.end());
      });
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, host, resolve));
    this.agents.set(pod.metadata!.name!, { ...this.agents.get(pod.metadata!.name!)!, server });
    await setPodStatus(this.core, this.namespace, pod.metadata!.name!, runningReady(host));
    return {
      captured,
      release: () => {
        released = true;
        for (const f of waiting.splice(0)) f();
      },
      drop: () => {
        for (const s of sockets) s.destroy();
      },
    };
  }

  /** The loopback address of a Pod's agent. */
  hostOf(podName: string): string | undefined {
    return this.agents.get(podName)?.host;
  }

  /** Sends raw bytes (a captured request) to a Pod's agent; resolves with the HTTP status. */
  async replay(podName: string, request: Buffer): Promise<number> {
    const warm = this.agents.get(podName);
    if (!warm) throw new Error(`no agent for ${podName}`);
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: warm.host, port: warm.agent.port }, () => socket.end(request));
      let answer = '';
      socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 0)));
    });
  }

  /** Calls a Pod's agent with a bearer token; resolves with the HTTP status (POST /v1/exec `true`). */
  async execStatus(podName: string, token: string): Promise<number> {
    const warm = this.agents.get(podName);
    if (!warm) throw new Error(`no agent for ${podName}`);
    const res = await fetch(`http://${warm.host}:${warm.agent.port}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'true' }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  /** Runs a command on a Pod's agent with a bearer token; resolves with its stdout (throws unless 200). */
  async execOutput(podName: string, token: string, command: string): Promise<string> {
    const warm = this.agents.get(podName);
    if (!warm) throw new Error(`no agent for ${podName}`);
    const res = await fetch(`http://${warm.host}:${warm.agent.port}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command }),
    });
    const body = (await res.json()) as { stdout?: string };
    if (res.status !== 200) throw new Error(`exec on ${podName} answered ${res.status}`);
    return body.stdout ?? '';
  }

  /** Stops every agent and relay. */
  async stopAll(): Promise<void> {
    for (const warm of this.agents.values()) {
      warm.server?.close();
      await warm.agent.close(0);
      rmSync(warm.dir, { recursive: true, force: true });
      rmSync(`${warm.dir}.bind.json`, { force: true });
    }
    this.agents.clear();
  }

  private async start(pod: k8s.V1Pod): Promise<void> {
    const host = `127.0.0.${this.next++}`;
    await this.agentFor(pod, host, this.port);
    await setPodStatus(this.core, this.namespace, pod.metadata!.name!, runningReady(host));
  }

  private async agentFor(pod: k8s.V1Pod, host: string, port: number): Promise<RunningAgent> {
    const dir = mkdtempSync(join(tmpdir(), 'warm-agent-'));
    const meta = pod.metadata!;
    const agent = await startAgent(
      agentConfig({
        token: '',
        host,
        port,
        workspace: dir,
        logLevel: 'error',
        bind: {
          key: bindSigner(this.masterKey).publicKeyHex,
          pod: { namespace: meta.namespace!, name: meta.name!, uid: meta.uid! },
          stateFile: `${dir}.bind.json`,
        },
      }),
      { logSink: () => undefined },
    );
    this.agents.set(meta.name!, { agent, dir, host });
    return agent;
  }
}
