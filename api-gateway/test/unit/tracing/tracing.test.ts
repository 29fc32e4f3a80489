/**
 * The gateway's traces end to end in one process: @fastify/otel's request span, a Kubernetes API
 * call through the traced client, and a real AgentTransport call to a local agent that answers the
 * command's timings; one trace with the right parents, the traceparent on the wire, trace ids in
 * the log lines, and no command text, body or token in any attribute.
 */
import type { AddressInfo } from 'node:net';

import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';

import { AgentTransport } from '../../../src/exec/agent/agent-transport.js';
import { WinstonFastifyLogger, createWinston, flushLogs } from '../../../src/logger.js';
import { traceOption } from '../../../src/tracing/request-trace.js';
import { startTracing, type GatewayTracing } from '../../../src/tracing/tracing.js';
import type { TracingConfig } from '../../../src/tracing/tracing-config.js';
import { DEMO_TARGET, FakeAgent, json } from '../../helpers/fake-agent.js';
import { result } from '../../helpers/fake-transport.js';

const CONFIG: TracingConfig = {
  endpoint: 'http://127.0.0.1:1',
  protocol: 'http/protobuf',
  sampler: 'parentbased_traceidratio',
  samplerRatio: 1,
  serviceName: 'sandbox-api-gateway',
};
const target = DEMO_TARGET;
/** A sampled remote parent: a call made under it is recorded. */
const SAMPLED_PARENT = {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
};
const SECRET_COMMAND = 'echo top-secret-command';
const TIMING = 'queue;dur=0.500, run;dur=2.000, output;desc=24, exit;desc=3';

describe('gateway tracing', () => {
  let agent: FakeAgent;
  let tracing: GatewayTracing;
  let exporter: InMemorySpanExporter;
  let app: FastifyInstance;
  let lines: string[];
  let serverTiming: string | undefined;
  let kubeCalls: unknown[];
  let release: () => void;
  let later: Promise<unknown>;

  beforeEach(async () => {
    agent = new FakeAgent();
    const port = await agent.start();
    serverTiming = TIMING;
    agent.handler = (_req, res) => {
      if (serverTiming !== undefined) res.setHeader('server-timing', serverTiming);
      json(res, 200, result({ stdout: 'top-secret-output\n', exitCode: 3 }));
    };
    exporter = new InMemorySpanExporter();
    tracing = startTracing(CONFIG, { exporter, simple: true, identity: 'test' });
    // Bound to this test's array: a batch of the previous test's logger may still be pending.
    const own: string[] = (lines = []);
    const winston = createWinston('info', { write: (chunk: string) => own.push(chunk) });
    const logger: FastifyBaseLogger = new WinstonFastifyLogger(winston);
    app = Fastify({ loggerInstance: logger });
    await app.register(tracing.fastifyPlugin);
    kubeCalls = [];
    const kube = tracing.kube.traceApi(
      {
        patchNamespacedCustomObject: (params: unknown): Promise<object> => {
          kubeCalls.push(params);
          return Promise.resolve({});
        },
        getNamespacedCustomObject: (): Promise<object> =>
          Promise.reject(Object.assign(new Error('HTTP-Code: 404\nMessage: not found'), { code: 404 })),
      },
      'sandboxsessions',
    );
    const transport = new AgentTransport({
      connectTimeoutMs: 500,
      connectRetries: 0,
      deadlineMarginMs: 200,
      maxOutputBytes: 64 * 1024,
      fileTimeoutMs: 2000,
      masterKey: Buffer.alloc(32, 7),
      port,
      tracing: tracing.agent,
    });
    // Each route passes its request's trace context down, as the gateway's routes do: there is no
    // process-wide active context (no context manager is registered).
    app.post('/v1/sessions/:name/exec', async (request) => {
      request.log.info({ session: 'demo' }, 'exec');
      const body = { metadata: { annotations: { token: 'not-in-a-span' } } };
      const ctx = request.traceContext;
      await kube(ctx).patchNamespacedCustomObject({
        namespace: 'team-a',
        plural: 'sandboxsessions',
        name: 'demo',
        body,
      });
      await kube(ctx)
        .getNamespacedCustomObject()
        .catch(() => undefined);
      return transport.exec(target, { command: SECRET_COMMAND, timeoutSeconds: 5 }, traceOption(request));
    });
    app.post('/v1/sessions/:name/exec/stream', async (request) => {
      const body = await transport.execStream(
        target,
        { command: SECRET_COMMAND, timeoutSeconds: 5 },
        traceOption(request),
      );
      let lines = 0;
      for await (const chunk of body) lines += String(chunk).split('\n').length - 1;
      return { lines };
    });
    // Reads the first piece of the stream and stops: the body is destroyed, no abort signal.
    app.post('/v1/sessions/:name/exec/stream/first', async (request) => {
      const body = await transport.execStream(
        target,
        { command: SECRET_COMMAND, timeoutSeconds: 5 },
        traceOption(request),
      );
      for await (const chunk of body) return { first: String(chunk).length > 0 };
      return { first: false };
    });
    // Passes the stream to the client, as the exec stream route does.
    app.post('/v1/sessions/:name/exec/stream/pass', async (request, reply) =>
      reply
        .type('application/x-ndjson')
        .send(
          await transport.execStream(
            target,
            { command: SECRET_COMMAND, timeoutSeconds: 5 },
            traceOption(request),
          ),
        ),
    );
    // Work that goes on after the answer (as the activity patch does), once the test releases it.
    const gate = new Promise<void>((resolve) => (release = resolve));
    later = Promise.resolve();
    app.post('/v1/sessions/:name/later', (request) => {
      later = gate.then(() =>
        kube(request.traceContext).patchNamespacedCustomObject({
          namespace: 'team-a',
          plural: 'sandboxsessions',
          name: 'demo',
        }),
      );
      return { ok: true };
    });
    app.get('/healthz', () => ({ status: 'ok' }));
    await app.ready();
  });

  afterEach(async () => {
    await app.close();
    await tracing.shutdown();
    await agent.stop();
  });

  const exec = async (): Promise<ReadableSpan[]> => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/sessions/demo/exec?waitSeconds=5&secret=query',
      payload: { command: SECRET_COMMAND },
    });
    expect(res.statusCode).toBe(200);
    return exporter.getFinishedSpans();
  };
  const named = (spans: ReadableSpan[], name: string): ReadableSpan => {
    const span = spans.find((s) => s.name === name);
    if (!span) throw new Error(`no span ${name} in ${spans.map((s) => s.name).join(', ')}`);
    return span;
  };

  it('records one trace: request, its Kubernetes calls and the agent call, whose child is the agent span', async () => {
    const spans = await exec();
    const request = named(spans, 'POST /v1/sessions/:name/exec');
    const patch = named(spans, 'k8s patchNamespacedCustomObject');
    const get = named(spans, 'k8s getNamespacedCustomObject');
    const call = named(spans, 'agent POST /v1/exec');
    const agentSpan = named(spans, 'sandbox-agent /v1/exec');
    const traceId = request.spanContext().traceId;
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(request.parentSpanContext).toBeUndefined();
    for (const child of [patch, get, call]) {
      expect(child.kind).toBe(SpanKind.CLIENT);
      expect(child.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    }
    expect(agentSpan.kind).toBe(SpanKind.SERVER);
    expect(agentSpan.parentSpanContext?.spanId).toBe(call.spanContext().spanId);

    expect(patch.attributes).toMatchObject({
      'k8s.api.method': 'patchNamespacedCustomObject',
      'k8s.resource.name': 'sandboxsessions',
      'k8s.namespace.name': 'team-a',
      'k8s.object.name': 'demo',
    });
    expect(get.attributes['http.response.status_code']).toBe(404);
    expect(get.status).toMatchObject({ code: 2, message: 'HTTP-Code: 404' });
    expect(agentSpan.attributes).toEqual({
      'sandbox.exec.queue_ms': 0.5,
      'sandbox.exec.run_ms': 2,
      'sandbox.exec.output_bytes': 24,
      'process.exit.code': 3,
    });
    expect(request.attributes['url.path']).toBe('/v1/sessions/demo/exec');
    expect(kubeCalls).toHaveLength(1);
  });

  it('keeps the parents over a real connection, where the body arrives after the request hooks', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/v1/sessions/demo/exec`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command: SECRET_COMMAND, pad: 'x'.repeat(256 * 1024) }),
    });
    expect(res.status).toBe(200);
    const spans = exporter.getFinishedSpans();
    const request = named(spans, 'POST /v1/sessions/:name/exec');
    const inRequest = new Set(spans.filter((s) => s !== request).map((s) => s.spanContext().traceId));
    expect(inRequest).toEqual(new Set([request.spanContext().traceId]));
    const handler = spans.find((s) => s.parentSpanContext?.spanId === request.spanContext().spanId);
    const parentOf = (name: string): string | undefined => named(spans, name).parentSpanContext?.spanId;
    expect([request.spanContext().spanId, handler?.spanContext().spanId]).toContain(
      parentOf('k8s patchNamespacedCustomObject'),
    );
    expect(parentOf('agent POST /v1/exec')).toBe(parentOf('k8s patchNamespacedCustomObject'));
  });

  it('sends the agent call span as a sampled W3C traceparent', async () => {
    const spans = await exec();
    const call = named(spans, 'agent POST /v1/exec');
    const { traceId, spanId } = call.spanContext();
    expect(agent.seen[0]!.headers.traceparent).toBe(`00-${traceId}-${spanId}-01`);
  });

  it('puts no command, output, body, query or token in any attribute or status', async () => {
    const spans = await exec();
    const text = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.status, s.events]));
    for (const secret of ['top-secret', 'not-in-a-span', 'secret=query', 'Bearer']) {
      expect(text).not.toContain(secret);
    }
  });

  it('writes trace_id and span_id of the request span in its log lines', async () => {
    const spans = await exec();
    const request = named(spans, 'POST /v1/sessions/:name/exec');
    flushLogsOf(app);
    const line = lines
      .join('')
      .split('\n')
      .find((l) => l.includes('"msg":"exec"'));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({
      trace_id: request.spanContext().traceId,
      span_id: request.spanContext().spanId,
    });
  });

  it('keeps the agent span within its call whatever durations a sandbox reports', async () => {
    serverTiming = 'queue;dur=86400000, run;dur=86400000';
    const spans = await exec();
    const call = named(spans, 'agent POST /v1/exec');
    const agentSpan = named(spans, 'sandbox-agent /v1/exec');
    const ns = (t: [number, number]): bigint => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);
    expect(ns(agentSpan.startTime)).toBeGreaterThanOrEqual(ns(call.startTime));
    expect(ns(agentSpan.endTime)).toBeLessThanOrEqual(ns(call.endTime));
  });

  it('records no agent span for a malformed Server-Timing, and marks the call', async () => {
    serverTiming = 'queue;dur=1, run;dur=1, cmd;desc=ls';
    const spans = await exec();
    expect(spans.some((s) => s.name.startsWith('sandbox-agent'))).toBe(false);
    expect(named(spans, 'agent POST /v1/exec').attributes['sandbox.agent.timing_invalid']).toBe(true);
  });

  it('traces a pods/exec call with its namespace and Pod, never its command', async () => {
    const executor = tracing.kube.traceApi(
      {
        exec: (_c: { namespace: string; podName: string; command: string[] }): Promise<string> =>
          Promise.resolve('socket'),
      },
      'pods/exec',
    );
    const parent = trace.setSpan(ROOT_CONTEXT, trace.wrapSpanContext(SAMPLED_PARENT));
    await executor(parent).exec({
      namespace: 'team-a',
      podName: 'sbs-demo',
      command: ['sh', '-c', SECRET_COMMAND],
    });
    const span = named(exporter.getFinishedSpans(), 'k8s exec');
    expect(span.parentSpanContext?.spanId).toBe(SAMPLED_PARENT.spanId);
    expect(span.attributes).toEqual({
      'k8s.api.method': 'exec',
      'k8s.resource.name': 'pods/exec',
      'k8s.namespace.name': 'team-a',
      'k8s.object.name': 'sbs-demo',
    });
  });

  it('records the agent span of a streamed exec from its trailer, once the body ended', async () => {
    agent.handler = (_req, res) => {
      res.setHeader('trailer', 'server-timing');
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write('{"type":"stdout","data":"top-secret-output\\n","encoding":"utf-8"}\n');
      res.addTrailers({ 'server-timing': TIMING });
      res.end(
        '{"type":"exit","exitCode":3,"durationMs":2,"truncated":false,"timedOut":false,"shellReset":false}\n',
      );
    };
    const res = await app.inject({ method: 'POST', url: '/v1/sessions/demo/exec/stream' });
    expect(res.json()).toEqual({ lines: 2 });
    const spans = exporter.getFinishedSpans();
    const call = named(spans, 'agent POST /v1/exec/stream');
    const agentSpan = named(spans, 'sandbox-agent /v1/exec/stream');
    expect(agentSpan.parentSpanContext?.spanId).toBe(call.spanContext().spanId);
    expect(agentSpan.attributes['process.exit.code']).toBe(3);
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('top-secret');
  });

  it('ends the call span of a streamed exec its reader abandoned, failed with a client.disconnected event', async () => {
    agent.handler = (_req, res) => {
      res.setHeader('trailer', 'server-timing');
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write('{"type":"stdout","data":"top-secret-output\\n","encoding":"utf-8"}\n'); // and never ends
    };
    const res = await app.inject({ method: 'POST', url: '/v1/sessions/demo/exec/stream/first' });
    expect(res.json()).toEqual({ first: true });
    const call = named(exporter.getFinishedSpans(), 'agent POST /v1/exec/stream');
    expect(call.status).toEqual({ code: 2, message: 'the caller stopped reading the answer' });
    expect(call.events.map((e) => e.name)).toEqual(['client.disconnected']);
    expect(exporter.getFinishedSpans().some((s) => s.name.startsWith('sandbox-agent'))).toBe(false);
  });

  it('ends the request span of a stream that broke off with its error, not as a client gone', async () => {
    agent.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write('{"type":"stdout","data":"x\\n","encoding":"utf-8"}\n', () => res.socket?.destroy());
    };
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/v1/sessions/demo/exec/stream/pass`, { method: 'POST' });
    await expect(res.text()).rejects.toThrow();
    let request: ReadableSpan | undefined;
    for (let i = 0; i < 100 && !request; i++) {
      request = exporter
        .getFinishedSpans()
        .find((s) => s.name === 'POST /v1/sessions/:name/exec/stream/pass');
      if (!request) await new Promise((r) => setTimeout(r, 20));
    }
    expect(request?.status.code).toBe(2);
    expect(request?.events.map((e) => e.name)).toEqual([]);
  });

  it('records nothing under a caller that did not sample its trace, and still propagates it', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const res = await app.inject({
      method: 'POST',
      url: '/v1/sessions/demo/exec',
      headers: { traceparent: `00-${traceId}-b7ad6b7169203331-00` },
      payload: { command: SECRET_COMMAND },
    });
    expect(res.statusCode).toBe(200);
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    expect(kubeCalls).toHaveLength(1);
    // The request's own (unrecorded) span is the agent call's parent: same trace, sampled flag off.
    expect(agent.seen[0]!.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));
    flushLogsOf(app);
    const line = lines
      .join('')
      .split('\n')
      .find((l) => l.includes('"msg":"exec"'));
    expect(JSON.parse(line!)).not.toHaveProperty('trace_id');
  });

  it('records the Kubernetes call of a sampled request that outlives its span', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/sessions/demo/later' });
    expect(res.statusCode).toBe(200);
    const request = named(exporter.getFinishedSpans(), 'POST /v1/sessions/:name/later');
    release();
    await later;
    const patch = named(exporter.getFinishedSpans(), 'k8s patchNamespacedCustomObject');
    expect(patch.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
  });

  it('does not trace probes', async () => {
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });
});

/** Writes the batched log lines now. */
function flushLogsOf(app: FastifyInstance): void {
  const root = (app.log as unknown as { root: Parameters<typeof flushLogs>[0] }).root;
  flushLogs(root);
}
