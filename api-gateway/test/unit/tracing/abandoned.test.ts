/**
 * Regression (issue 17): a client that goes away in the middle of a streamed answer (the exec
 * stream, a process output follow, the terminal, the port proxy) left the gateway's spans of that
 * request and of the agent call open forever (the terminal's and the port proxy's), or ended them
 * before the body as if all went well (the streams'): never exported, or wrong. Each must end with
 * the connection, an HTTP one marked failed with a `client.disconnected` event, a WebSocket with a
 * `websocket.closed` event. Through the real app in front of a real in-process agent, spans in an
 * in-memory exporter.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import WebSocket from 'ws';

import { startTracing, type GatewayTracing } from '../../../src/tracing/tracing.js';
import { KEYS, auth } from '../../helpers/app.js';
import { buildPtyHelper, startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { TRACING_TEST_CONFIG, finishedSpan } from '../../helpers/tracing.js';

/** The span ended as the client went away: error status and the event. */
function expectAbandoned(span: ReadableSpan): void {
  expect(span.status.code).toBe(SpanStatusCode.ERROR);
  expect(span.events.map((e) => e.name)).toContain('client.disconnected');
}

/** Sends a request and resolves with the response once its first body bytes arrived. */
function firstBytes(
  url: string,
  init: { method: string; body?: string; headers?: Record<string, string> },
): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method, headers: { ...auth(KEYS.a), ...init.headers } });
    req.once('response', (res) => res.once('data', () => resolve({ req, res })));
    req.once('error', reject);
    req.end(init.body);
  });
}

describe('spans of a client that went away mid-stream', () => {
  let g: AgentApp;
  let tracing: GatewayTracing;
  let exporter: InMemorySpanExporter;
  let app: http.Server;
  let appPort: number;

  beforeAll(async () => {
    exporter = new InMemorySpanExporter();
    tracing = startTracing(TRACING_TEST_CONFIG, { exporter, simple: true, identity: 'test' });
    g = await startAgentApp({ tracing, ptyHelperPath: await buildPtyHelper() });
    // A server "in the sandbox" that streams forever: the port proxy's upstream.
    app = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first\n');
      const timer = setInterval(() => res.write('more\n'), 100);
      res.once('close', () => clearInterval(timer));
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    appPort = (app.address() as AddressInfo).port;
  });
  afterEach(() => exporter.reset());
  afterAll(async () => {
    app.closeAllConnections();
    await new Promise((r) => app.close(r));
    await g.close();
    await tracing.shutdown();
  });

  it('the exec stream: the request span and the agent call span end, marked', async () => {
    const { req } = await firstBytes(`${g.url}/v1/sessions/demo/exec/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'echo started; sleep 30', timeoutSeconds: 60 }),
    });
    req.destroy();
    const call = await finishedSpan(exporter, 'agent POST /v1/exec/stream');
    expectAbandoned(call);
    const request = await finishedSpan(exporter, 'POST /v1/sessions/:name/exec/stream');
    expect(call.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expectAbandoned(request);
  });

  it('a process output follow: the request span ends, marked', async () => {
    const started = await fetch(`${g.url}/v1/sessions/demo/processes`, {
      method: 'POST',
      headers: { ...auth(KEYS.a), 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'echo one; exec sleep 300' }),
    });
    const { id } = (await started.json()) as { id: string };
    const { req } = await firstBytes(`${g.url}/v1/sessions/demo/processes/${id}/output/stream`, {
      method: 'GET',
    });
    req.destroy();
    expectAbandoned(await finishedSpan(exporter, 'GET /v1/sessions/:name/processes/:id/output/stream'));
    await finishedSpan(exporter, 'agent GET /v1/processes/{id}');
  });

  it('the terminal: the upgrade request span ends when the client drops the connection', async () => {
    const ws = new WebSocket(`${g.url.replace('http', 'ws')}/v1/sessions/demo/pty`, {
      headers: auth(KEYS.a),
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.terminate();
    const span = await finishedSpan(exporter, 'GET /v1/sessions/:name/pty');
    expect(span.events.map((e) => e.name)).toEqual(['websocket.closed']);
  });

  it('the port proxy: the request span ends when the client leaves mid-body', async () => {
    const { req } = await firstBytes(`${g.url}/v1/sessions/demo/ports/${appPort}/stream`, { method: 'GET' });
    req.destroy();
    expectAbandoned(await finishedSpan(exporter, 'GET /v1/sessions/:name/ports/:port/*'));
  });
});
