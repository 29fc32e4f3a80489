/**
 * The command's timings for a traced call (src/tracing/command-timing.ts): answered in a
 * Server-Timing header only for a sampled W3C traceparent, never with the command or its output.
 */
import { request } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { parseTraceparent } from '../../src/tracing/command-timing.js';
import { TestAgent } from './helpers/test-agent.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';

describe('parseTraceparent', () => {
  it('reads a version 00 header', () => {
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-01`)).toEqual({
      traceId: TRACE,
      parentId: PARENT,
      sampled: true,
    });
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-00`)?.sampled).toBe(false);
  });

  it.each([
    ['absent', undefined],
    ['repeated', [`00-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01`]],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${PARENT}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['upper case', `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ['another version', `01-${TRACE}-${PARENT}-01`],
    ['a short id', `00-${TRACE.slice(1)}-${PARENT}-01`],
  ])('ignores one %s', (_what, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe('Server-Timing of a traced exec', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await TestAgent.start();
  });
  afterAll(async () => {
    await agent.stop();
  });

  const exec = (traceparent?: string) =>
    agent.send({
      method: 'POST',
      path: '/v1/exec',
      headers: { 'content-type': 'application/json', ...(traceparent ? { traceparent } : {}) },
      body: JSON.stringify({ command: 'printf secret-output-12; exit 3' }),
    });

  it('answers queue, run, output bytes and exit for a sampled traceparent', async () => {
    const res = await exec(`00-${TRACE}-${PARENT}-01`);
    expect(res.status).toBe(200);
    const timing = String(res.headers['server-timing']);
    expect(timing).toMatch(/^queue;dur=\d+\.\d{3}, run;dur=\d+\.\d{3}, output;desc=16, exit;desc=3$/);
    expect(timing).not.toContain('secret');
    expect(JSON.parse(res.body.toString())).toMatchObject({ stdout: 'secret-output-12', exitCode: 3 });
  });

  it('sends them as a trailer after a streamed answer', async () => {
    const { trailers, declared, body } = await new Promise<{
      trailers: NodeJS.Dict<string>;
      declared: string | undefined;
      body: string;
    }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: agent.running.port,
          method: 'POST',
          path: '/v1/exec/stream',
          headers: {
            authorization: `Bearer ${agent.token}`,
            'content-type': 'application/json',
            traceparent: `00-${TRACE}-${PARENT}-01`,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ trailers: res.trailers, declared: res.headers.trailer, body: text }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ command: 'printf secret-output-12; exit 3' }));
    });
    expect(declared).toBe('server-timing');
    expect(trailers['server-timing']).toMatch(
      /^queue;dur=\d+\.\d{3}, run;dur=\d+\.\d{3}, output;desc=16, exit;desc=3$/,
    );
    expect(body).toContain('"type":"exit"');
  });

  it.each([
    ['no traceparent', undefined],
    ['an unsampled traceparent', `00-${TRACE}-${PARENT}-00`],
    ['an invalid traceparent', `00-${TRACE}-${PARENT}-1`],
  ])('sends no Server-Timing with %s', async (_what, traceparent) => {
    const res = await exec(traceparent);
    expect(res.status).toBe(200);
    expect(res.headers['server-timing']).toBeUndefined();
  });
});
