/**
 * Reconcile traces: one root span per reconcile, one child span per phase that ran, failures
 * marked, the ids in log fields; the sampler settings; and the OTLP/HTTP export itself, to a
 * receiver on loopback (JSON decoded; protobuf checked by its content type and path).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';

import { afterEach, describe, expect, it } from '@jest/globals';
import { SamplingDecision, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';

import { createLogger } from '../../../src/telemetry/logger.js';
import { sampler, startTracing, type Tracing } from '../../../src/telemetry/tracing.js';
import type { TracingConfig } from '@sandbox-platform/api';

const CONFIG: TracingConfig = {
  endpoint: 'http://127.0.0.1:1',
  protocol: 'http/json',
  sampler: 'parentbased_traceidratio',
  samplerRatio: 1,
  serviceName: 'sandbox-operator',
};

function inMemory(config: Partial<TracingConfig> = {}): { tracing: Tracing; exporter: InMemorySpanExporter } {
  const exporter = new InMemorySpanExporter();
  return { tracing: startTracing({ ...CONFIG, ...config }, { identity: 'op-1', exporter }), exporter };
}

describe('reconcile spans', () => {
  it('a root span per reconcile, with a child span per phase that ran, in order', async () => {
    const { tracing, exporter } = inMemory();
    const result = await tracing.traceReconcile('team-a/demo', async () => {
      await tracing.tracePhase('ensureSecret', () => Promise.resolve({}));
      await tracing.tracePhase('ensurePod', () => Promise.resolve({}));
      await tracing.tracePhase('expireIfDue', () => Promise.resolve({}));
      return { requeueAfterMs: 5000 };
    });
    expect(result).toEqual({ requeueAfterMs: 5000 });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual([
      'ensureSecret',
      'ensurePod',
      'expireIfDue',
      'reconcile SandboxSession',
    ]);
    const root = spans.at(-1)!;
    expect(root.parentSpanContext).toBeUndefined();
    expect(root.kind).toBe(SpanKind.INTERNAL);
    expect(root.attributes).toEqual({
      'k8s.namespace.name': 'team-a',
      'sandbox.session.name': 'demo',
      'sandbox.reconcile.phases': ['ensureSecret', 'ensurePod', 'expireIfDue'],
      'sandbox.reconcile.requeue_after_ms': 5000,
    });
    for (const phase of spans.slice(0, 3)) {
      expect(phase.spanContext().traceId).toBe(root.spanContext().traceId);
      expect(phase.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
    }
    expect(root.resource.attributes).toMatchObject({
      'service.name': 'sandbox-operator',
      'service.instance.id': 'op-1',
    });
  });

  it('concurrent reconciles keep their own spans (async context, not a global)', async () => {
    const { tracing, exporter } = inMemory();
    let open = (): void => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const a = tracing.traceReconcile('ns/a', async () => {
      await gate;
      await tracing.tracePhase('ensurePod', () => Promise.resolve({}));
      return {};
    });
    const b = tracing.traceReconcile('ns/b', async () => {
      await tracing.tracePhase('ensureSecret', () => Promise.resolve({}));
      open();
      return {};
    });
    await Promise.all([a, b]);
    const byName = new Map(exporter.getFinishedSpans().map((s) => [s.name, s]));
    const roots = exporter.getFinishedSpans().filter((s) => s.name === 'reconcile SandboxSession');
    const rootOf = (session: string) => roots.find((r) => r.attributes['sandbox.session.name'] === session)!;
    expect(byName.get('ensurePod')?.parentSpanContext?.spanId).toBe(rootOf('a').spanContext().spanId);
    expect(byName.get('ensureSecret')?.parentSpanContext?.spanId).toBe(rootOf('b').spanContext().spanId);
    expect(rootOf('a').attributes['sandbox.reconcile.phases']).toEqual(['ensurePod']);
  });

  it('marks the failed phase and the reconcile with the first line of the error, and remembers the ids', async () => {
    const { tracing, exporter } = inMemory();
    const err = new Error('create Pod sbs-demo\nsecond line');
    await expect(
      tracing.traceReconcile('team-a/demo', () => tracing.tracePhase('ensurePod', () => Promise.reject(err))),
    ).rejects.toBe(err);
    const [phase, root] = exporter.getFinishedSpans();
    expect(phase?.status).toEqual({ code: 2, message: 'create Pod sbs-demo' });
    expect(root?.status).toEqual({ code: 2, message: 'create Pod sbs-demo' });
    expect(root?.attributes['error.type']).toBe('Error');
    expect(tracing.errorFields(err)).toEqual({
      trace_id: root?.spanContext().traceId,
      span_id: root?.spanContext().spanId,
    });
    expect(tracing.errorFields(new Error('other'))).toBeUndefined();
  });

  it('puts the ids of the span in progress into log lines, and none outside a span', async () => {
    const { tracing, exporter } = inMemory();
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger('info', {}, { context: () => tracing.logFields(), stream });
    logger.info('outside');
    await tracing.traceReconcile('team-a/demo', () =>
      tracing.tracePhase('ensurePod', () => {
        logger.info('inside');
        return Promise.resolve({});
      }),
    );
    const [outside, inside] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(outside).not.toHaveProperty('trace_id');
    const phase = exporter.getFinishedSpans()[0]!;
    expect(inside).toMatchObject({
      msg: 'inside',
      trace_id: phase.spanContext().traceId,
      span_id: phase.spanContext().spanId,
    });
  });

  it('a sampler that drops the trace records nothing and logs no ids', async () => {
    const { tracing, exporter } = inMemory({ sampler: 'always_off' });
    let fields: unknown;
    await tracing.traceReconcile('team-a/demo', () =>
      tracing.tracePhase('ensurePod', () => {
        fields = tracing.logFields();
        return Promise.resolve({});
      }),
    );
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect(fields).toEqual({});
  });
});

describe('sampler', () => {
  const decide = (
    config: Pick<TracingConfig, 'sampler' | 'samplerRatio'>,
    traceId: string,
  ): SamplingDecision =>
    sampler(config).shouldSample(ROOT_CONTEXT, traceId, 'x', SpanKind.INTERNAL, {}, []).decision;
  // The ratio sampler compares the XOR of the trace id's 32-bit words with ratio x 2^32.
  const LOW = '00000000000000000000000000000001';
  const HIGH = 'ffffffff000000000000000000000000';

  it('follows OTEL_TRACES_SAMPLER and its ratio', () => {
    expect(decide({ sampler: 'always_on', samplerRatio: 0 }, HIGH)).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide({ sampler: 'always_off', samplerRatio: 1 }, LOW)).toBe(SamplingDecision.NOT_RECORD);
    expect(decide({ sampler: 'traceidratio', samplerRatio: 0.5 }, LOW)).toBe(
      SamplingDecision.RECORD_AND_SAMPLED,
    );
    expect(decide({ sampler: 'traceidratio', samplerRatio: 0.5 }, HIGH)).toBe(SamplingDecision.NOT_RECORD);
    expect(decide({ sampler: 'parentbased_traceidratio', samplerRatio: 0 }, LOW)).toBe(
      SamplingDecision.NOT_RECORD,
    );
    expect(decide({ sampler: 'parentbased_always_on', samplerRatio: 0 }, HIGH)).toBe(
      SamplingDecision.RECORD_AND_SAMPLED,
    );
  });
});

describe('OTLP/HTTP export', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  /** A receiver on loopback that keeps every request. */
  async function receiver(): Promise<{
    url: string;
    requests: Array<{ path?: string; type?: string; body: Buffer }>;
  }> {
    const requests: Array<{ path?: string; type?: string; body: Buffer }> = [];
    server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        requests.push({ path: req.url, type: req.headers['content-type'], body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    const listening = server;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(listening.address() as AddressInfo).port}/`, requests };
  }

  it('http/json: posts the spans to <endpoint>/v1/traces on shutdown', async () => {
    const rx = await receiver();
    const tracing = startTracing(
      { ...CONFIG, endpoint: rx.url, protocol: 'http/json' },
      { identity: 'op-1' },
    );
    await tracing.traceReconcile('team-a/demo', () =>
      tracing.tracePhase('ensurePod', () => Promise.resolve({})),
    );
    await tracing.shutdown();
    expect(rx.requests).toHaveLength(1);
    expect(rx.requests[0]).toMatchObject({ path: '/v1/traces', type: 'application/json' });
    const body = JSON.parse(rx.requests[0]!.body.toString()) as {
      resourceSpans: Array<{
        resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
        scopeSpans: Array<{ spans: Array<{ name: string }> }>;
      }>;
    };
    const [resourceSpans] = body.resourceSpans;
    expect(resourceSpans?.resource.attributes).toContainEqual({
      key: 'service.name',
      value: { stringValue: 'sandbox-operator' },
    });
    expect(resourceSpans?.scopeSpans[0]?.spans.map((s) => s.name).sort()).toEqual([
      'ensurePod',
      'reconcile SandboxSession',
    ]);
  });

  it('http/protobuf (the default): posts protobuf to <endpoint>/v1/traces', async () => {
    const rx = await receiver();
    const tracing = startTracing(
      { ...CONFIG, endpoint: rx.url.replace(/\/$/, ''), protocol: 'http/protobuf' },
      { identity: 'op-1' },
    );
    await tracing.traceReconcile('team-a/demo', () => Promise.resolve({}));
    await tracing.shutdown();
    expect(rx.requests).toHaveLength(1);
    expect(rx.requests[0]).toMatchObject({ path: '/v1/traces', type: 'application/x-protobuf' });
    // The span name travels as a protobuf string field: its bytes are in the body.
    expect(rx.requests[0]!.body.includes(Buffer.from('reconcile SandboxSession'))).toBe(true);
  });
});
