/**
 * The request timeout firing while the answer is already under way: a streamed-stdin exec
 * (`POST .../exec/stream`, NDJSON body) answers while its body is still open, so a caller that
 * keeps the body open past GATEWAY_REQUEST_TIMEOUT_SECONDS meets the timeout mid-answer. The
 * connection must then be cut, not sent a "408" head inside the chunked answer (fastify's default
 * client-error handler did that: clients failed with "Invalid character in chunk size").
 */
import net from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { KEYS } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';

/** One chunk of a chunked request body. */
const chunk = (text: string): string => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

describe('request timeout during a streamed answer', () => {
  let g: AgentApp;

  beforeAll(async () => {
    g = await startAgentApp({
      env: { GATEWAY_HEADERS_TIMEOUT_SECONDS: '1', GATEWAY_REQUEST_TIMEOUT_SECONDS: '2' },
    });
  });
  afterAll(() => g.close());

  it('cuts the connection without writing a 408 into the answer', async () => {
    const { hostname, port } = new URL(g.url);
    const got = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.write(
          'POST /v1/sessions/demo/exec/stream HTTP/1.1\r\nhost: x\r\n' +
            `authorization: Bearer ${KEYS.a}\r\ncontent-type: application/x-ndjson\r\n` +
            'transfer-encoding: chunked\r\n\r\n' +
            chunk(JSON.stringify({ command: 'cat' }) + '\n') +
            chunk(JSON.stringify({ type: 'stdin', data: 'first\n' }) + '\n'),
        );
        // ...and the body is never finished.
      });
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => resolve(text));
    });
    // The answer had started (cat echoed the first line) before the timeout cut the connection.
    expect(got).toMatch(/^HTTP\/1\.1 200 /);
    expect(got).toContain('"type":"stdout"');
    expect(got).not.toContain('HTTP/1.1 408');
  });
});
