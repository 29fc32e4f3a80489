/**
 * The server's time and memory limits, on a listening gateway (fakes behind it): slow headers,
 * a body that never finishes, an answer the client never reads. Assertions are on what happens
 * (the connection is closed, the budget is given back), never on how fast.
 */
import net from 'node:net';

import { afterEach, describe, expect, it } from '@jest/globals';

import { KEYS, buildTestApp, type TestApp } from '../../helpers/app.js';
import { result } from '../../helpers/fake-transport.js';
import { ready, session } from '../../helpers/sessions.js';

/** Opens a raw connection, writes `text`, and resolves with everything read until the server closed it. */
function rawRequest(url: string, text: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(text));
    let got = '';
    socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
  });
}

describe('server limits', () => {
  let t: TestApp;
  let url: string;
  afterEach(async () => {
    await t.app.close();
  });

  const start = async (env: Record<string, string>): Promise<void> => {
    t = await buildTestApp(env);
    t.store.put(session('demo', 'team-a', ready()));
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  };

  it('closes a connection whose request body never finishes (408), so it cannot hold the request open', async () => {
    await start({ GATEWAY_HEADERS_TIMEOUT_SECONDS: '1', GATEWAY_REQUEST_TIMEOUT_SECONDS: '2' });
    const got = await rawRequest(
      url,
      'PUT /v1/sessions/demo/files/a.txt HTTP/1.1\r\nhost: x\r\n' +
        `authorization: Bearer ${KEYS.a}\r\ncontent-length: 1000\r\n\r\n` +
        'only the first bytes',
    );
    expect(got).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes a connection whose headers never finish (408)', async () => {
    // The request timeout (which also covers headers) is far off: the headers timeout must act.
    await start({ GATEWAY_HEADERS_TIMEOUT_SECONDS: '1', GATEWAY_REQUEST_TIMEOUT_SECONDS: '300' });
    const got = await rawRequest(
      url,
      `POST /v1/sessions/demo/exec HTTP/1.1\r\nhost: x\r\nauthorization: Bearer`,
    );
    expect(got).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('drops a large answer the client does not read after the write timeout, and gives its memory back', async () => {
    await start({ GATEWAY_WRITE_TIMEOUT_SECONDS: '1', GATEWAY_MAX_BUFFERED_ANSWER_BYTES: String(256 << 20) });
    // Larger than what the kernel's socket buffers absorb on loopback (tcp_rmem max 32 MiB + wmem 4 MiB).
    t.agent.nextResult = result({ stdout: 'x'.repeat(64 << 20) });
    const body = JSON.stringify({ command: 'big' });
    const { hostname, port } = new URL(url);
    const socket = net.connect(Number(port), hostname, () => {
      socket.pause(); // never read: the answer stays in the server's buffers
      socket.write(
        'POST /v1/sessions/demo/exec HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
          `authorization: Bearer ${KEYS.a}\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      );
    });
    socket.on('error', () => undefined);
    const until = async (cond: () => boolean): Promise<void> => {
      while (!cond()) await new Promise((r) => setTimeout(r, 50));
    };
    // The answer is held (counted in the budget) while the client does not read it...
    await until(() => t.app.answerBudget.inUse > 0);
    // ...until the write timeout closes the connection (a paused client sees no close: it never
    // reads the FIN), which gives the bytes back.
    await until(() => t.app.answerBudget.inUse === 0);
    socket.destroy();
    expect(t.app.answerBudget.inUse).toBe(0);
  });
});
