/**
 * Regression: uploads whose body never finishes, through the files route to an agent that reads
 * them as they come (the upload is streamed to it). Each caller's own request timeout must end it
 * with node:http's 408. The e2e hostile-tenant spec once got a 502 upstream-error for one of them:
 * the first upload to time out failed its agent call, which dropped the agent's connection pool,
 * cutting the other uploads' agent connections while their callers were still within their own
 * timeout; they were answered 502 (and logged and counted as the sandbox's failure). A real
 * upstream failure while the caller is still sending stays 502.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { FastifyInstance } from 'fastify';

import { buildApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { AgentTransport } from '../../../src/exec/agent/agent-transport.js';
import { WinstonFastifyLogger, createWinston, flushLogs } from '../../../src/logger.js';
import { createMetrics, type GatewayMetrics } from '../../../src/metrics.js';
import { FakeActivity, KEYS, TEST_ENV, testKeys } from '../../helpers/app.js';
import { FakeStore } from '../../helpers/fake-store.js';
import { FakeTransport } from '../../helpers/fake-transport.js';
import { ready, session } from '../../helpers/sessions.js';

/** Body bytes sent of the 900000 declared (what the e2e spec sends), then nothing. */
const SENT = 60_000;

describe('stalled uploads to an agent that reads them', () => {
  let agent: http.Server;
  /** Body bytes the agent received, per file path. */
  let received: Map<string, number>;
  let agentPort: number;
  let transport: AgentTransport;
  let metrics: GatewayMetrics;
  let app: FastifyInstance;
  let url: string;
  let lines: string[];
  let winston: ReturnType<typeof createWinston>;

  beforeEach(async () => {
    received = new Map();
    // An agent that reads every upload as it comes and answers 201 at its end (never, here).
    agent = http.createServer((req, res) => {
      const path = req.url ?? '';
      received.set(path, 0);
      req.on('data', (c: Buffer) => received.set(path, received.get(path)! + c.length));
      req.on('end', () => res.writeHead(201, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((r) => agent.listen(0, '127.0.0.1', r));
    agentPort = (agent.address() as AddressInfo).port;
    const config = loadConfig({
      ...TEST_ENV,
      GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
      GATEWAY_MAX_FILE_BYTES: String(1 << 20),
      GATEWAY_HEADERS_TIMEOUT_SECONDS: '1',
      GATEWAY_REQUEST_TIMEOUT_SECONDS: '3',
    });
    transport = new AgentTransport({
      masterKey: Buffer.alloc(32, 3),
      port: agentPort,
      connectTimeoutMs: 1000,
      connectRetries: 0,
      deadlineMarginMs: 1000,
      maxOutputBytes: 64 * 1024,
      fileTimeoutMs: 30_000,
    });
    const store = new FakeStore();
    store.put(session('demo', 'team-a', ready('127.0.0.1')));
    const own: string[] = (lines = []);
    winston = createWinston('debug', { write: (chunk: string) => own.push(chunk) });
    metrics = createMetrics();
    app = await buildApp({
      config,
      logger: new WinstonFastifyLogger(winston),
      keys: await testKeys(),
      store,
      transports: { Agent: transport, KubernetesExec: new FakeTransport() },
      activity: new FakeActivity(),
      metrics,
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterEach(async () => {
    await app.close();
    agent.closeAllConnections();
    await new Promise((r) => agent.close(r));
  });

  /**
   * A PUT of `file` declaring 900000 bytes, sending SENT of them; resolves with the answer once it
   * is whole (its Content-Length), or with what came when the gateway closed the connection.
   */
  function stalledPut(file: string): Promise<string> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve) => {
      const socket = net.connect(Number(port), hostname, () =>
        socket.write(
          `PUT /v1/sessions/demo/files/${file} HTTP/1.1\r\nhost: x\r\n` +
            `authorization: Bearer ${KEYS.a}\r\ncontent-type: application/octet-stream\r\n` +
            `content-length: 900000\r\n\r\n${'x'.repeat(SENT)}`,
        ),
      );
      let got = '';
      socket.on('data', (c: Buffer) => {
        got += c.toString('latin1');
        const end = got.indexOf('\r\n\r\n');
        const length = /\r\ncontent-length: (\d+)\r\n/i.exec(got.slice(0, end))?.[1];
        if (end >= 0 && length !== undefined && got.length >= end + 4 + Number(length)) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(got));
    });
  }

  /** Waits for `cond` (at most 5 s: a test that fails must not hang). */
  const until = async (cond: () => boolean): Promise<void> => {
    const deadline = Date.now() + 5000;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${cond.toString()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const atAgent = (file: string) => (): boolean => received.get(`/v1/files/${file}`) === SENT;

  /** The log lines, once written. */
  const logged = (): string[] => {
    flushLogs(winston);
    return lines.join('').split('\n').filter(Boolean);
  };
  /** The lines that say how a request that got no answer of its own ended. */
  const endings = (): string[] => logged().filter((l) => /"msg":"request (failed|abandoned)/.test(l));

  it('one stalled upload ends in 408, logged as abandoned by the caller, not as an upstream error', async () => {
    const answer = await stalledPut('a.bin');
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(received.get('/v1/files/a.bin')).toBe(SENT);
    await until(() => endings().length === 1);
    expect(endings()[0]).toMatch(/"level":"debug".*"msg":"request abandoned by the caller"/);
    expect(logged().filter((l) => /"level":"(warn|error)"|upstream-error/.test(l))).toEqual([]);
  });

  it("one caller's request timeout does not cut another's upload: both end in 408, the agent's pool stays", async () => {
    const started = Date.now();
    const first = stalledPut('first.bin');
    await until(atAgent('first.bin'));
    // The second starts over a second later: its own timeout fires at least one check (1 s) after
    // the first's, while its upload is on its way to the agent.
    await new Promise((r) => setTimeout(r, Math.max(0, started + 1200 - Date.now())));
    let firstAnswered = false;
    void first.then(() => (firstAnswered = true));
    const second = stalledPut('second.bin');
    await until(atAgent('second.bin'));
    expect(firstAnswered).toBe(false); // else the test shows nothing
    const answers = await Promise.all([first, second]);
    expect(answers.map((a) => a.slice(0, 12))).toEqual(['HTTP/1.1 408', 'HTTP/1.1 408']);
    expect(transport.pool.has(`127.0.0.1:${agentPort}`)).toBe(true);
    // Neither is the sandbox's failure: no warning, no upstream-error, no 5xx in the metrics.
    await until(() => endings().length === 2);
    expect(logged().filter((l) => /"level":"(warn|error)"|upstream-error/.test(l))).toEqual([]);
    expect(await metrics.registry.metrics()).not.toMatch(/status="5\d\d"/);
  }, 15_000);

  it('an agent that breaks the connection while the caller is still sending: 502 upstream-error', async () => {
    agent.removeAllListeners('request');
    agent.on('request', (req: http.IncomingMessage) => {
      let got = 0;
      req.on('data', (c: Buffer) => {
        got += c.length;
        if (got >= SENT) req.socket.destroy();
      });
    });
    // Answered as the agent broke off, before the caller's request timeout (which would have
    // answered 408 on a connection where nothing was written yet).
    const answer = await stalledPut('broken.bin');
    expect(answer).toMatch(/^HTTP\/1\.1 502 /);
    expect(answer).toContain('"type":"https://sandbox.dev/problems/upstream-error"');
    await until(() => logged().some((l) => l.includes('"slug":"upstream-error"')));
  });
});
