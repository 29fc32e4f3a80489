/**
 * e2e: one exec through the in-cluster gateway is one trace at a real OTLP receiver. The receiver
 * is the OpenTelemetry Collector's own otlpreceiver (test-e2e/localkube/addons/otel-receiver, built
 * from its Go module and cached), run on the node's bridge address, which the gateway pods reach.
 * The spec turns the gateway's tracing on with a helm upgrade (gateway.tracing.otlpEndpoint) and
 * off again afterwards, so every other spec runs with tracing off.
 *
 * The exec carries a traceparent of the test's own (the gateway's sampler is parent-based), so the
 * trace is found by its id; it must hold the gateway's request span (a child of the test's), a
 * Kubernetes API span (the first exec of a session stamps its activity annotation) and the agent
 * call as children of the request, and the agent's span of the command as a child of the call, with
 * its exit status and output size and without the command text; the gateway's log line of the exec
 * carries the trace and span ids. A streamed exec's trace has the same links, its agent span from
 * the Server-Timing trailer after the NDJSON body. The agent's own log lines of a traced call carry
 * the trace id and, as span id, the gateway's span of the call.
 *
 * Local cluster only (the receiver runs on this node); needs platform.env.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';

import { LABELS, SANDBOX_COMPONENT } from '@sandbox-platform/api';
import { SandboxClient, type Session } from '@sandbox-platform/client';
import { kubeClients, predicate, REPO_ROOT, waitFor } from '../../src/framework/index.js';
import { describeOnLocal } from '../../src/framework/not-run.js';

const NAMESPACE = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
/** localkube's bridge (docs/localkube.md): the node's address as pods see it. */
const BRIDGE = '198.18.0.1';
const IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
const COMMAND = 'echo traced-output; exit 3';

/** One span of an OTLP JSON export, with its resource's service.name. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
  service: string;
}
const SERVER = 2;
const CLIENT = 3;

/** The spans of one trace in the receiver's file (one OTLP JSON export per line). */
function spansOf(file: string, traceId: string): OtlpSpan[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  type Export = {
    resourceSpans?: Array<{
      resource?: { attributes?: OtlpSpan['attributes'] };
      scopeSpans?: Array<{ spans?: Array<Omit<OtlpSpan, 'service'>> }>;
    }>;
  };
  const exports = text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Export);
  return exports.flatMap((doc) =>
    (doc.resourceSpans ?? []).flatMap((rs) => {
      const service = String(
        rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue,
      );
      return (rs.scopeSpans ?? [])
        .flatMap((ss) => ss.spans ?? [])
        .filter((sp) => sp.traceId === traceId)
        .map((sp) => ({ ...sp, service }));
    }),
  );
}

/** An attribute's value (int64 values come as strings in OTLP JSON). */
function attr(span: OtlpSpan, key: string): unknown {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  if ('intValue' in v) return Number(v.intValue);
  return v.stringValue ?? v.doubleValue ?? v.boolValue;
}

/** A free TCP port on the bridge address. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves once the receiver printed that it listens; rejects if it exits first. */
function listening(proc: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let err = '';
    proc.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      if (err.includes('listening on')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`otel-receiver exited (${code}): ${err}`)));
  });
}

const helm = (...args: string[]): string =>
  execFileSync(join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'bin', 'helm'), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  }).toString();

/** The release's own gateway.extraEnv (user-supplied values), restored when tracing is turned off. */
function releaseGatewayExtraEnv(): Array<{ name: string; value?: string }> {
  const values = JSON.parse(helm('get', 'values', RELEASE, '-n', PLATFORM_NS, '-o', 'json') || '{}') as {
    gateway?: { extraEnv?: Array<{ name: string; value?: string }> };
  } | null;
  return values?.gateway?.extraEnv ?? [];
}

/**
 * The gateway's span export delay while the spec traces (OTEL_BSP_SCHEDULE_DELAY, read by the
 * OpenTelemetry SDK's BatchSpanProcessor; 5 s by default): the spans are still exported in
 * batches, only sooner, so each test waits less for its trace.
 */
const EXPORT_DELAY_MS = 500;

/**
 * Sets the gateway's OTLP endpoint ('' turns tracing off) and waits for the rollout. `extraEnv`
 * is the gateway's extraEnv to set in the same upgrade (one rollout).
 */
function setGatewayTracing(endpoint: string, extraEnv: Array<{ name: string; value?: string }>): void {
  helm(
    'upgrade',
    RELEASE,
    join(REPO_ROOT, 'charts', 'sandbox-platform'),
    '-n',
    PLATFORM_NS,
    '--reuse-values',
    '--set-string',
    `gateway.tracing.otlpEndpoint=${endpoint}`,
    '--set-json',
    `gateway.extraEnv=${JSON.stringify(extraEnv)}`,
    '--wait',
    '--timeout',
    '3m',
  );
}

/** Every gateway pod is one of the new ReplicaSet's (none terminating, all with the endpoint set). */
function gatewayRolledOut(endpoint: string): (pods: k8s.V1PodList) => boolean {
  return (pods) => {
    const gw = pods.items.filter((p) => p.metadata?.labels?.['app.kubernetes.io/component'] === 'gateway');
    return (
      gw.length > 0 &&
      gw.every((p) => {
        const env = p.spec?.containers[0]?.env ?? [];
        const set = env.find((e) => e.name === 'OTEL_EXPORTER_OTLP_ENDPOINT')?.value ?? '';
        const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        return !p.metadata?.deletionTimestamp && set === endpoint && ready === true;
      })
    );
  };
}

describeOnLocal('traces of an exec through the in-cluster gateway', () => {
  const kube = kubeClients();
  const baseUrl = process.env.E2E_GATEWAY_URL ?? '';
  const apiKey = process.env.E2E_GATEWAY_API_KEY ?? '';
  const client = new SandboxClient({ baseUrl, apiKey, namespace: NAMESPACE, retry: { retries: 0 } });
  const name = `traced-${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'e2e-otlp-'));
  const file = join(dir, 'spans.jsonl');
  let receiver: ChildProcess | undefined;
  let endpoint = '';
  /** The release's gateway.extraEnv before the spec (undefined until read). */
  let extraEnvBefore: Array<{ name: string; value?: string }> | undefined;

  beforeAll(async () => {
    if (!baseUrl || !apiKey) throw new Error('needs E2E_GATEWAY_URL and E2E_GATEWAY_API_KEY (platform.env)');
    const build = join(REPO_ROOT, 'test-e2e', 'localkube', 'addons', 'otel-receiver', 'build.sh');
    const bin = join(
      execFileSync(build, { stdio: ['ignore', 'pipe', 'inherit'] })
        .toString()
        .trim(),
      'otel-receiver',
    );
    const port = await freePort(BRIDGE);
    endpoint = `http://${BRIDGE}:${port}`;
    receiver = spawn(bin, ['--endpoint', `${BRIDGE}:${port}`, '--out', file], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    await listening(receiver);
    // The session is created while the gateway rolls out (the operator, not the gateway, makes it
    // Ready); its exec waits for the rollout below.
    await client.createSession({ name, image: IMAGE, idleTimeoutSeconds: 900 });
    extraEnvBefore = releaseGatewayExtraEnv().filter((e) => e.name !== 'OTEL_BSP_SCHEDULE_DELAY');
    setGatewayTracing(endpoint, [
      ...extraEnvBefore,
      { name: 'OTEL_BSP_SCHEDULE_DELAY', value: String(EXPORT_DELAY_MS) },
    ]);
    await waitFor(
      () => kube.core.listNamespacedPod({ namespace: PLATFORM_NS }),
      predicate('every gateway pod traces to the receiver', gatewayRolledOut(endpoint)),
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    await waitFor(
      () => client.getSession(name),
      predicate<Session>(`session ${name} Ready`, (s) => s.ready),
      { timeoutMs: 180_000, intervalMs: 250 },
    );
  }, 480_000);

  afterAll(async () => {
    await client.deleteSession(name).catch(() => undefined);
    try {
      if (extraEnvBefore !== undefined) setGatewayTracing('', extraEnvBefore);
    } finally {
      receiver?.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);

  it('delivers one trace: request, its Kubernetes API call and agent call, and the agent command span', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    const res = await fetch(`${baseUrl}/v1/sessions/${name}/exec?namespace=${NAMESPACE}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${parentId}-01`,
      },
      body: JSON.stringify({ command: COMMAND, timeoutSeconds: 30 }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ stdout: 'traced-output\n', exitCode: 3 });

    // The gateway exports in batches (every EXPORT_DELAY_MS here; 5 s by default).
    const spans = await waitFor(
      () => Promise.resolve(spansOf(file, traceId)),
      predicate(
        'the trace has its request, Kubernetes, agent call and agent spans',
        (s: OtlpSpan[]) =>
          ['POST /v1/sessions/:name/exec', 'agent POST /v1/exec', 'sandbox-agent /v1/exec'].every((n) =>
            s.some((x) => x.name === n),
          ) && s.some((x) => x.name.startsWith('k8s ')),
      ),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const byName = (n: string): OtlpSpan => spans.find((s) => s.name === n)!;
    const request = byName('POST /v1/sessions/:name/exec');
    const call = byName('agent POST /v1/exec');
    const agent = byName('sandbox-agent /v1/exec');
    const kubeCall = spans.find((s) => s.name.startsWith('k8s '))!;

    expect(request).toMatchObject({ kind: SERVER, parentSpanId: parentId, service: 'sandbox-api-gateway' });
    expect(kubeCall).toMatchObject({ kind: CLIENT, parentSpanId: request.spanId });
    expect(kubeCall.name).toBe('k8s patchNamespacedCustomObject');
    expect(attr(kubeCall, 'k8s.namespace.name')).toBe(NAMESPACE);
    expect(attr(kubeCall, 'k8s.object.name')).toBe(name);
    expect(call).toMatchObject({ kind: CLIENT, parentSpanId: request.spanId });
    expect(agent).toMatchObject({ kind: SERVER, parentSpanId: call.spanId });
    expect(attr(agent, 'process.exit.code')).toBe(3);
    expect(attr(agent, 'sandbox.exec.output_bytes')).toBe('traced-output\n'.length);
    expect(attr(agent, 'sandbox.exec.run_ms')).toEqual(expect.any(Number));
    expect(attr(agent, 'sandbox.exec.queue_ms')).toEqual(expect.any(Number));
    expect(JSON.stringify(spans)).not.toContain('traced-output');

    // The gateway's audit line of the exec carries the trace: found in the log by its trace id.
    const line = await waitFor(
      () => gatewayLogLine(`"trace_id":"${traceId}"`),
      predicate('a gateway log line with the trace id', (l: string | undefined) => l !== undefined),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(JSON.parse(line!)).toMatchObject({ msg: 'exec', session: name, span_id: request.spanId });
  });

  it('delivers the trace of a streamed exec: request, agent call, and the agent span from the trailer', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    const res = await fetch(`${baseUrl}/v1/sessions/${name}/exec/stream?namespace=${NAMESPACE}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${parentId}-01`,
      },
      body: JSON.stringify({ command: COMMAND, timeoutSeconds: 30 }),
    });
    expect(res.status).toBe(200);
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; exitCode?: number });
    expect(lines.at(-1)).toMatchObject({ type: 'exit', exitCode: 3 });

    const names = [
      'POST /v1/sessions/:name/exec/stream',
      'agent POST /v1/exec/stream',
      'sandbox-agent /v1/exec/stream',
    ];
    const spans = await waitFor(
      () => Promise.resolve(spansOf(file, traceId)),
      predicate('the trace has its request, agent call and agent spans', (s: OtlpSpan[]) =>
        names.every((n) => s.some((x) => x.name === n)),
      ),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const [request, call, agent] = names.map((n) => spans.find((s) => s.name === n)!);
    expect(request).toMatchObject({ kind: SERVER, parentSpanId: parentId, service: 'sandbox-api-gateway' });
    expect(call).toMatchObject({ kind: CLIENT, parentSpanId: request!.spanId });
    expect(agent).toMatchObject({ kind: SERVER, parentSpanId: call!.spanId });
    expect(attr(agent!, 'process.exit.code')).toBe(3);
    expect(attr(agent!, 'sandbox.exec.output_bytes')).toBe('traced-output\n'.length);
    expect(JSON.stringify(spans)).not.toContain('traced-output');
  });

  it("the agent's own log lines of a traced call carry the trace id and the gateway's call span", async () => {
    const traceId = randomBytes(16).toString('hex');
    const res = await fetch(`${baseUrl}/v1/sessions/${name}/exec?namespace=${NAMESPACE}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
      },
      // Stopped at its timeout: the agent's "command stopped" line is at info level.
      body: JSON.stringify({ command: 'sleep 30', timeoutSeconds: 1 }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ timedOut: true });
    const spans = await waitFor(
      () => Promise.resolve(spansOf(file, traceId)),
      predicate('the trace has its agent call', (s: OtlpSpan[]) =>
        s.some((x) => x.name === 'agent POST /v1/exec'),
      ),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const call = spans.find((s) => s.name === 'agent POST /v1/exec')!;
    const pods = await kube.core.listNamespacedPod({
      namespace: NAMESPACE,
      labelSelector: `${LABELS.session}=${name},${LABELS.component}=${SANDBOX_COMPONENT}`,
    });
    const podName = pods.items[0]?.metadata?.name;
    if (pods.items.length !== 1 || !podName) throw new Error(`session ${name} has ${pods.items.length} Pods`);
    const line = await waitFor(
      async () =>
        (await kube.core.readNamespacedPodLog({ name: podName, namespace: NAMESPACE }))
          .split('\n')
          .find((l) => l.includes(`"trace_id":"${traceId}"`)),
      predicate('an agent log line with the trace id', (l: string | undefined) => l !== undefined),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(JSON.parse(line!)).toMatchObject({ msg: 'command stopped', span_id: call.spanId });
    expect(line).not.toContain('sleep 30');
  });

  /** The first line of a gateway pod's log containing `text`. */
  async function gatewayLogLine(text: string): Promise<string | undefined> {
    const pods = await kube.core.listNamespacedPod({
      namespace: PLATFORM_NS,
      labelSelector: 'app.kubernetes.io/component=gateway',
    });
    for (const pod of pods.items) {
      const log = await kube.core.readNamespacedPodLog({ name: pod.metadata!.name!, namespace: PLATFORM_NS });
      const found = log.split('\n').find((l) => l.includes(text));
      if (found) return found;
    }
    return undefined;
  }
});
