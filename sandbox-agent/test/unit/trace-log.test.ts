/**
 * Trace ids in the agent's log lines (src/tracing/trace-log.ts): the lines written for a request
 * with a sampled traceparent carry trace_id and span_id (the gateway's field names; span_id is the
 * traceparent's parent, the gateway's call span), the request line and the command's own lines
 * alike, and a traced terminal's lines; untraced or unsampled requests carry none; the command
 * text is in no line.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';

import { traceLogFields } from '../../src/tracing/trace-log.js';
import { buildPtyHelper, PtyClient } from './helpers/pty-client.js';
import { TestAgent } from './helpers/test-agent.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';
const SAMPLED = `00-${TRACE}-${PARENT}-01`;
const COMMAND = 'echo secret-command-text >/dev/null';

interface Line {
  msg: string;
  trace_id?: string;
  span_id?: string;
}

describe('trace ids in the agent log', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await TestAgent.start();
  });
  afterAll(async () => {
    await agent.stop();
  });
  beforeEach(() => {
    agent.logs.length = 0;
  });

  const exec = async (
    path: '/v1/exec' | '/v1/exec/stream',
    traceparent: string | undefined,
    body: object = { command: COMMAND },
    waitFor = ['request'],
  ): Promise<Line[]> => {
    const res = await agent.send({
      method: 'POST',
      path,
      headers: { 'content-type': 'application/json', ...(traceparent ? { traceparent } : {}) },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    // The request line is written when the response closes, a stop line after the sweep: wait (bounded).
    const written = (): boolean => waitFor.every((m) => agent.logs.some((l) => l.includes(`"msg":"${m}"`)));
    for (let i = 0; i < 300 && !written(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(agent.logs.join('')).not.toContain('secret-command-text');
    return agent.logs.map((l) => JSON.parse(l) as Line);
  };
  const named = (lines: Line[], msg: string): Line => {
    const line = lines.find((l) => l.msg === msg);
    if (!line) throw new Error(`no "${msg}" line in ${JSON.stringify(lines.map((l) => l.msg))}`);
    return line;
  };

  it.each(['/v1/exec', '/v1/exec/stream'] as const)(
    '%s with a sampled traceparent: the request and command lines carry the ids',
    async (path) => {
      const lines = await exec(path, SAMPLED);
      for (const msg of ['request', 'command finished']) {
        expect(named(lines, msg)).toMatchObject({ trace_id: TRACE, span_id: PARENT });
      }
    },
  );

  it('a command stopped at its timeout: the stop line carries them too', async () => {
    const lines = await exec('/v1/exec', SAMPLED, { command: 'sleep 30', timeoutSeconds: 1 }, [
      'request',
      'command stopped',
    ]);
    expect(named(lines, 'command stopped')).toMatchObject({ trace_id: TRACE, span_id: PARENT });
  });

  it('a background process started and signalled by traced calls: their lines carry the ids', async () => {
    const headers = { 'content-type': 'application/json', traceparent: SAMPLED };
    const started = await agent.send({
      method: 'POST',
      path: '/v1/processes',
      headers,
      body: JSON.stringify({ command: 'exec sleep 30 # secret-command-text' }),
    });
    expect(started.status).toBe(201);
    const { id } = JSON.parse(started.body.toString()) as { id: string };
    const signalled = await agent.send({
      method: 'POST',
      path: `/v1/processes/${id}/signal`,
      headers,
      body: JSON.stringify({ signal: 'SIGKILL' }),
    });
    expect(signalled.status).toBe(200);
    expect(agent.logs.join('')).not.toContain('secret-command-text');
    const lines = agent.logs.map((l) => JSON.parse(l) as Line);
    for (const msg of ['process started', 'process signalled']) {
      expect(named(lines, msg)).toMatchObject({ trace_id: TRACE, span_id: PARENT });
    }
  });

  it('a terminal opened by a traced upgrade: its opened and closed lines carry the ids', async () => {
    const traced = await TestAgent.start({ ptyHelperPath: await buildPtyHelper() });
    try {
      const pty = await PtyClient.open(traced, '', traced.token, '/v1/pty', { traceparent: SAMPLED });
      pty.type('exit 0\r');
      expect((await pty.closed).code).toBe(1000);
      const written = (): boolean => traced.logs.some((l) => l.includes('"msg":"terminal closed"'));
      for (let i = 0; i < 300 && !written(); i++) await new Promise((r) => setTimeout(r, 10));
      const lines = traced.logs.map((l) => JSON.parse(l) as Line);
      for (const msg of ['request', 'terminal opened', 'terminal closed']) {
        expect(named(lines, msg)).toMatchObject({ trace_id: TRACE, span_id: PARENT });
      }
    } finally {
      await traced.stop();
    }
  });

  it.each([
    ['no traceparent', undefined],
    ['an unsampled one', `00-${TRACE}-${PARENT}-00`],
    ['an invalid one', `00-${TRACE}-${'0'.repeat(16)}-01`],
  ])('%s: no ids on any line', async (_what, traceparent) => {
    const lines = await exec('/v1/exec', traceparent);
    named(lines, 'command finished');
    for (const line of lines)
      expect([line.msg, line.trace_id, line.span_id]).toEqual([line.msg, undefined, undefined]);
  });

  it('traceLogFields reads only the ids', () => {
    const req = { headers: { traceparent: SAMPLED } } as unknown as Parameters<typeof traceLogFields>[0];
    expect(traceLogFields(req)).toEqual({ trace_id: TRACE, span_id: PARENT });
  });
});
