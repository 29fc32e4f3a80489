/**
 * The operator process with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT): its reconcile spans reach
 * an OTLP/HTTP receiver on loopback (JSON encoding, so the test can read them), one root span per
 * reconcile with the session's namespace and name and a child span per phase, and the operator's
 * log lines written meanwhile carry the same trace ids. A stand-in receiver: the collector end to
 * end belongs to the e2e tier.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';
import type { OperatorProcess } from './harness/operator-process.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: { stringValue?: string; arrayValue?: unknown } }>;
}

const fx = new OperatorFixture('op-trace');
const { ns, sessions } = fx;
const spans: OtlpSpan[] = [];
const posts: Array<{ path?: string; type?: string }> = [];
let receiver: Server;
let op: OperatorProcess;

function attr(span: OtlpSpan, key: string): string | undefined {
  return span.attributes?.find((a) => a.key === key)?.value.stringValue;
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      posts.push({ path: req.url, type: req.headers['content-type'] });
      const parsed = JSON.parse(body) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      for (const rs of parsed.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const { port } = receiver.address() as AddressInfo;
  await fx.setup();
  op = await fx.startController({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'operator-it',
    },
  });
});

afterAll(async () => {
  const code = await op?.stop('SIGTERM');
  expect(code).toBe(0);
  await fx.teardown();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

describe('operator traces', () => {
  it('exports a reconcile span per reconcile with a child span per phase, and logs its ids', async () => {
    await sessions.create('traced');
    const root = await waitFor(
      () =>
        Promise.resolve(
          spans.find(
            (s) => s.name === 'reconcile SandboxSession' && attr(s, 'sandbox.session.name') === 'traced',
          ),
        ),
      predicate('a reconcile span of session traced', (s) => s !== undefined),
      { timeoutMs: 30_000 },
    );
    expect(attr(root!, 'k8s.namespace.name')).toBe(ns.name);
    expect(posts[0]).toMatchObject({ path: '/v1/traces', type: 'application/json' });
    const children = spans.filter((s) => s.traceId === root!.traceId && s.parentSpanId === root!.spanId);
    expect(children.map((s) => s.name)).toEqual(
      expect.arrayContaining(['ensureSecret', 'ensurePod', 'expireIfDue']),
    );
    // "created pod" is logged inside the ensurePod span of a reconcile of this session.
    const created = await op.waitForLog((l) => l.message === 'created pod' && l.session === 'traced');
    expect(created.trace_id).toMatch(/^[0-9a-f]{32}$/);
    const ensurePod = await waitFor(
      () => Promise.resolve(spans.find((s) => s.spanId === created.span_id)),
      predicate('the span the log line names', (s) => s !== undefined),
      { timeoutMs: 30_000 },
    );
    expect(ensurePod).toMatchObject({ name: 'ensurePod', traceId: created.trace_id });
  });
});
