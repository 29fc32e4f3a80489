/**
 * The request's trace context goes from the gateway's own routes down to its agent and Kubernetes
 * calls explicitly (CallOptions.trace, the store's `trace` argument, the activity subject): no
 * context manager is registered, so a route or service that drops the context leaves its calls
 * without a parent (no agent span, no store span), and these tests fail. Through the real app in
 * front of a real in-process agent, spans in an in-memory exporter.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

import { startTracing, type GatewayTracing } from '../../../src/tracing/tracing.js';
import { KEYS, auth } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { connectMcp } from '../../helpers/mcp-client.js';
import {
  TRACING_TEST_CONFIG,
  recordTraceArguments,
  spanIdOf,
  type TraceArgument,
} from '../../helpers/tracing.js';

const named = (spans: ReadableSpan[], name: string): ReadableSpan => {
  const span = spans.find((s) => s.name === name);
  if (!span) throw new Error(`no span ${name} in ${spans.map((s) => s.name).join(', ') || 'none'}`);
  return span;
};

describe('the trace context from the routes down', () => {
  let g: AgentApp;
  let tracing: GatewayTracing;
  let exporter: InMemorySpanExporter;
  /** The trace argument of each store call and activity report, by what was called. */
  let seen: TraceArgument[];

  beforeAll(async () => {
    exporter = new InMemorySpanExporter();
    tracing = startTracing(TRACING_TEST_CONFIG, { exporter, simple: true, identity: 'test' });
    g = await startAgentApp({ tracing });
    seen = recordTraceArguments(g, [
      ['createOrGet', 1],
      ['delete', 2],
      ['setSuspended', 3],
      ['readFresh', 2],
    ]);
  });
  afterEach(() => exporter.reset());
  afterAll(async () => {
    await g.close();
    await tracing.shutdown();
  });

  const send = async (method: string, path: string, body?: unknown): Promise<number> => {
    seen.length = 0;
    const res = await fetch(`${g.url}${path}`, {
      method,
      headers: { ...auth(KEYS.a), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    await res.arrayBuffer();
    return res.status;
  };

  it('registers no context manager: the active context is always the root', () => {
    const span = trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 });
    context.with(trace.setSpan(context.active(), span), () => {
      expect(trace.getSpan(context.active())).toBeUndefined();
    });
  });

  it('exec: the agent call is a child of the request span, the agent span of the call; activity carries the context', async () => {
    expect(await send('POST', '/v1/sessions/demo/exec', { command: 'true' })).toBe(200);
    const spans = exporter.getFinishedSpans();
    const request = named(spans, 'POST /v1/sessions/:name/exec');
    const call = named(spans, 'agent POST /v1/exec');
    expect(call.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(named(spans, 'sandbox-agent /v1/exec').parentSpanContext?.spanId).toBe(call.spanContext().spanId);
    const reports = seen.filter((s) => s.call === 'activity');
    expect(reports.length).toBeGreaterThan(0);
    for (const r of reports) expect(spanIdOf(r.trace)).toBe(request.spanContext().spanId);
  });

  it('a file upload and a process start: their agent calls are children of the request span', async () => {
    const put = await fetch(`${g.url}/v1/sessions/demo/files/traced.txt`, {
      method: 'PUT',
      headers: { ...auth(KEYS.a), 'content-type': 'application/octet-stream' },
      body: 'hello',
    });
    expect(put.status).toBe(201);
    expect(await send('POST', '/v1/sessions/demo/processes', { command: 'true' })).toBe(201);
    const spans = exporter.getFinishedSpans();
    const upload = named(spans, 'PUT /v1/sessions/:name/files/*');
    expect(named(spans, 'agent PUT /v1/files/{id}').parentSpanContext?.spanId).toBe(
      upload.spanContext().spanId,
    );
    const start = named(spans, 'POST /v1/sessions/:name/processes');
    expect(named(spans, 'agent POST /v1/processes').parentSpanContext?.spanId).toBe(
      start.spanContext().spanId,
    );
  });

  it('an MCP exec tool call: the agent call is a child of its /mcp request span', async () => {
    const client = await connectMcp(g.url, KEYS.a);
    try {
      exporter.reset();
      await client.callTool({ name: 'exec', arguments: { session: 'demo', command: 'true' } });
    } finally {
      await client.close();
    }
    const spans = exporter.getFinishedSpans();
    const call = named(spans, 'agent POST /v1/exec');
    const request = spans.find((s) => s.spanContext().spanId === call.parentSpanContext?.spanId);
    expect(request?.name).toBe('POST /mcp');
  });

  it("session writes and reads through the API server get the request's context", async () => {
    const cases: Array<[string, string, unknown, string, string]> = [
      ['POST', '/v1/sessions', { name: 'traced' }, 'createOrGet', 'POST /v1/sessions'],
      ['POST', '/v1/sessions/demo/suspend', {}, 'setSuspended', 'POST /v1/sessions/:name/suspend'],
      ['GET', '/v1/sessions/unknown', undefined, 'readFresh', 'GET /v1/sessions/:name'],
      ['DELETE', '/v1/sessions/traced', undefined, 'delete', 'DELETE /v1/sessions/:name'],
    ];
    for (const [method, path, body, call, span] of cases) {
      exporter.reset();
      await send(method, path, body);
      const request = named(exporter.getFinishedSpans(), span);
      const calls = seen.filter((s) => s.call === call);
      expect(calls.map((c) => [call, spanIdOf(c.trace)])).toEqual([[call, request.spanContext().spanId]]);
    }
  });
});
