/**
 * The request's trace context down the interactive routes and the KubernetesExec transport, as
 * tracing-routes.test.ts checks it for exec, files, processes, sessions and MCP: the terminal's
 * agent WebSocket (`agent GET /v1/pty`), the Kubernetes calls of the terminal and the port proxy
 * (the resume of a suspended session, the activity patch), and a KubernetesExec session's
 * pods/exec (`k8s exec`) are children of the request's span. Through the real app in front of a
 * real in-process agent (and a local pods/exec for KubernetesExec), spans in an in-memory exporter.
 */
import type http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { ROOT_CONTEXT, TraceFlags, trace, type Context } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { FastifyInstance } from 'fastify';
import WebSocket, { WebSocketServer } from 'ws';

import { buildApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { AgentInteractive } from '../../../src/exec/agent/agent-interactive.js';
import { AgentTransport } from '../../../src/exec/agent/agent-transport.js';
import { KubernetesExecTransport } from '../../../src/exec/kube/kube-exec-transport.js';
import type { ExecTarget } from '../../../src/sessions/model.js';
import { WinstonFastifyLogger, silentWinston } from '../../../src/logger.js';
import { startTracing, type GatewayTracing } from '../../../src/tracing/tracing.js';
import { FakeActivity, KEYS, TEST_ENV, auth, testKeys } from '../../helpers/app.js';
import { buildPtyHelper, startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { FakeStore } from '../../helpers/fake-store.js';
import { startSandboxServer, type SandboxServer } from '../../helpers/sandbox-server.js';
import { FakeTransport } from '../../helpers/fake-transport.js';
import { LocalPodExecutor } from '../../helpers/local-pod-executor.js';
import { kubeExec, ready, session } from '../../helpers/sessions.js';
import {
  TRACING_TEST_CONFIG,
  finishedSpan,
  recordTraceArguments,
  spanIdOf,
  type TraceArgument,
} from '../../helpers/tracing.js';

/** Opens a WebSocket through the gateway with key A. */
function openWs(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url.replace('http', 'ws'), { headers: auth(KEYS.a) });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

const closed = (ws: WebSocket): Promise<number> =>
  new Promise((resolve) => ws.once('close', (code: number) => resolve(code)));

let tracing: GatewayTracing;
let exporter: InMemorySpanExporter;

beforeAll(() => {
  exporter = new InMemorySpanExporter();
  tracing = startTracing(TRACING_TEST_CONFIG, { exporter, simple: true, identity: 'test' });
});
afterEach(() => exporter.reset());
afterAll(async () => {
  await tracing.shutdown();
});

describe('the trace context down the terminal and port routes', () => {
  let g: AgentApp;
  let sandbox: SandboxServer;
  let port: number;
  /** The trace argument of each store call and activity report, by what was called. */
  let seen: TraceArgument[] = [];

  beforeAll(async () => {
    g = await startAgentApp({ tracing, ptyHelperPath: await buildPtyHelper() });
    seen = recordTraceArguments(g, [
      ['setSuspended', 3],
      ['readFresh', 2],
    ]);
    // A server in the sandbox (the session's pod IP is 127.0.0.1): HTTP, and WebSocket echo.
    sandbox = await startSandboxServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    port = sandbox.port;
  });
  afterAll(async () => {
    await sandbox.close();
    await g.close();
  });

  /** Session demo suspended: the request's resolve resumes it (a Kubernetes patch), then goes on. */
  const suspendDemo = (): void => {
    g.store.put(session('demo', 'team-a', ready('127.0.0.1'), (s) => void (s.spec.suspend = true)));
    seen.length = 0;
  };

  /** The resume and the activity reports of the request, each with the request span's context. */
  const expectKubeCallsUnder = (request: ReadableSpan): void => {
    const id = request.spanContext().spanId;
    expect(seen.filter((s) => s.call === 'setSuspended').map((s) => spanIdOf(s.trace))).toEqual([id]);
    const reports = seen.filter((s) => s.call === 'activity');
    expect(reports.length).toBeGreaterThan(0);
    expect(reports.map((r) => spanIdOf(r.trace))).toEqual(reports.map(() => id));
  };

  /** Opens a terminal on the suspended session, exits it; the request span, once ended. */
  const terminal = async (): Promise<ReadableSpan> => {
    suspendDemo();
    const ws = await openWs(`${g.url}/v1/sessions/demo/pty`);
    const done = closed(ws);
    ws.send(Buffer.from('exit 0\n'), { binary: true });
    expect(await done).toBe(1000);
    return finishedSpan(exporter, 'GET /v1/sessions/:name/pty');
  };

  it('terminal: the resume and the activity report are children of the request span', async () => {
    expectKubeCallsUnder(await terminal());
  });

  it("terminal: the agent's WebSocket is an agent span, a child of the request span", async () => {
    const request = await terminal();
    const dial = await finishedSpan(exporter, 'agent GET /v1/pty');
    expect(dial.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(dial.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(dial.attributes['http.response.status_code']).toBe(101);
  });

  it('port, HTTP: the resume and the activity report are children of the request span', async () => {
    suspendDemo();
    const res = await fetch(`${g.url}/v1/sessions/demo/ports/${port}/page`, { headers: auth(KEYS.a) });
    expect(await res.text()).toBe('ok');
    expectKubeCallsUnder(await finishedSpan(exporter, 'GET /v1/sessions/:name/ports/:port/*'));
  });

  it('port, WebSocket: the resume and the activity report are children of the request span', async () => {
    suspendDemo();
    const ws = await openWs(`${g.url}/v1/sessions/demo/ports/${port}/echo`);
    const echoed = new Promise((r) => ws.once('message', (data: Buffer) => r(data.toString())));
    ws.send('ping');
    expect(await echoed).toBe('ping');
    const done = closed(ws);
    ws.close(1000);
    await done;
    expectKubeCallsUnder(await finishedSpan(exporter, 'GET /v1/sessions/:name/ports/:port/*'));
  });
});

describe('the trace context down a KubernetesExec session', () => {
  let app: FastifyInstance;
  let executor: LocalPodExecutor;
  let workspace: string;

  beforeAll(async () => {
    workspace = await mkdtemp(join(tmpdir(), 'gw-kx-trace-'));
    const config = loadConfig(TEST_ENV);
    const store = new FakeStore();
    store.put(session('kx', 'team-a', ready(), kubeExec));
    executor = new LocalPodExecutor();
    const kube = new KubernetesExecTransport({
      executor,
      // As compose.ts wires it with tracing on.
      traced: tracing.kube.traceApi(executor, 'pods/exec'),
      maxOutputBytes: config.exec.maxOutputBytes,
      deadlineMarginMs: 2000,
      fileTimeoutMs: 5000,
      workspace,
    });
    app = await buildApp({
      config,
      logger: new WinstonFastifyLogger(silentWinston()),
      keys: await testKeys(),
      store,
      transports: { Agent: new FakeTransport(), KubernetesExec: kube },
      activity: new FakeActivity(),
      tracingPlugin: tracing.fastifyPlugin,
    });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await rm(workspace, { recursive: true, force: true });
  });

  it.each([
    [
      'POST',
      '/v1/sessions/kx/exec',
      'POST /v1/sessions/:name/exec',
      'application/json',
      '{"command":"echo traced"}',
    ],
    [
      'POST',
      '/v1/sessions/kx/exec/stream',
      'POST /v1/sessions/:name/exec/stream',
      'application/json',
      '{"command":"echo traced"}',
    ],
    [
      'PUT',
      '/v1/sessions/kx/files/traced.txt',
      'PUT /v1/sessions/:name/files/*',
      'application/octet-stream',
      'hi',
    ],
  ])(
    '%s %s: the pods/exec call is a k8s exec span, a child of the request span',
    async (method, url, name, type, body) => {
      executor.calls.length = 0;
      const res = await app.inject({
        method: method as 'POST' | 'PUT',
        url,
        headers: { ...auth(KEYS.a), 'content-type': type },
        payload: body,
      });
      expect(res.statusCode).toBeLessThan(300);
      expect(executor.calls).toHaveLength(1);
      const request = await finishedSpan(exporter, name);
      const podExec = await finishedSpan(exporter, 'k8s exec');
      expect(podExec.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      expect(podExec.attributes).toEqual({
        'k8s.api.method': 'exec',
        'k8s.resource.name': 'pods/exec',
        'k8s.namespace.name': 'team-a',
        'k8s.object.name': 'sbs-kx',
      });
    },
  );
});

describe("the agent's WebSocket dial (AgentInteractive.dialAgent)", () => {
  let wss: WebSocketServer;
  let headers: http.IncomingHttpHeaders[];
  let interactive: AgentInteractive;
  const target: ExecTarget = {
    namespace: 'team-a',
    name: 'demo',
    uid: 'uid-demo',
    podName: 'sbs-demo',
    podIP: '127.0.0.1',
    transport: 'Agent',
    idleTimeoutSeconds: 1800,
  };
  const parent = trace.setSpan(
    ROOT_CONTEXT,
    trace.wrapSpanContext({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    }),
  );

  beforeAll(async () => {
    headers = [];
    wss = new WebSocketServer({
      port: 0,
      host: '127.0.0.1',
      verifyClient: (info: { req: http.IncomingMessage }) => {
        headers.push(info.req.headers);
        return info.req.url?.startsWith('/v1/pty') === true;
      },
    });
    await new Promise((r) => wss.once('listening', r));
    const transport = new AgentTransport({
      masterKey: Buffer.alloc(32, 9),
      port: (wss.address() as AddressInfo).port,
      connectTimeoutMs: 1000,
      connectRetries: 0,
      deadlineMarginMs: 1000,
      maxOutputBytes: 1024,
      fileTimeoutMs: 1000,
      tracing: tracing.agent,
    });
    interactive = new AgentInteractive(transport);
  });
  afterAll(async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
  });

  const dial = async (path: string, trace?: Context): Promise<void> => {
    const ws = await interactive.dialAgent(
      target,
      path,
      { search: 'cols=80', timeoutMs: 2000, maxPayload: 1024 },
      trace,
    );
    ws.terminate();
  };

  it('under a trace context: an agent span, its child of that span, whose traceparent the agent gets', async () => {
    headers = [];
    await dial('/v1/pty', parent);
    const span = await finishedSpan(exporter, 'agent GET /v1/pty');
    expect(span.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    const { traceId, spanId } = span.spanContext();
    expect(headers.map((h) => h.traceparent)).toEqual([`00-${traceId}-${spanId}-01`]);
    expect(headers[0]!.authorization).toMatch(/^Bearer /);
  });

  it('a refused upgrade fails the span; without a trace context, no span and no traceparent', async () => {
    await expect(dial('/v1/refused', parent)).rejects.toThrow('the upgrade was answered with HTTP 401');
    expect((await finishedSpan(exporter, 'agent GET /v1/refused')).status.code).toBe(2);
    exporter.reset();
    headers = [];
    await dial('/v1/pty');
    expect(headers.map((h) => h.traceparent)).toEqual([undefined]);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
