/**
 * readAhead (http/body.ts): a request body read from the socket ahead of a slow consumer, within
 * its bound, in order, and a body cut short is an error rather than a short archive.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';

import { afterEach, describe, expect, it } from '@jest/globals';

import { readAhead } from '../../src/http/body.js';

const KIB = 1024;

/** A server whose one request is handed to `handle`; resolves with its port. */
async function serve(
  handle: (req: IncomingMessage) => Promise<void>,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    void handle(req).finally(() => res.end('done'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server?.closeAllConnections();
});

describe('readAhead', () => {
  it('hands over every byte in order', async () => {
    const body = Buffer.alloc(3 * 1024 * KIB);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7 + (i >> 10)) & 0xff;
    let received: Buffer | undefined;
    const s = await serve(async (req) => {
      const chunks: Buffer[] = [];
      for await (const c of readAhead(req, 256 * KIB)) chunks.push(c);
      received = Buffer.concat(chunks);
    });
    server = s.server;
    await new Promise<void>((resolve, reject) => {
      const req = request({ port: s.port, host: '127.0.0.1', method: 'PUT', path: '/' }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end(body);
    });
    expect(received?.equals(body)).toBe(true);
  });

  it('reads ahead of a consumer that does not take, up to its bound, then pauses the request', async () => {
    const bound = 512 * KIB;
    let state: { paused: boolean } | undefined;
    const s = await serve(async (req) => {
      const it = readAhead(req, bound)[Symbol.asyncIterator]();
      await it.next(); // the first chunk taken; then nothing more
      // Without a bound the request would keep flowing into the queue and never be paused.
      await waitUntil(() => req.isPaused()).catch(() => undefined);
      state = { paused: req.isPaused() };
      await it.return(undefined);
    });
    server = s.server;
    // 8 MiB offered to a consumer that takes one chunk.
    const socket = connect(s.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(`PUT / HTTP/1.1\r\nhost: x\r\ncontent-length: ${8 * 1024 * KIB}\r\n\r\n`);
    const block = Buffer.alloc(64 * KIB, 1);
    const pump = (): void => {
      while (socket.write(block)) {
        if (state) return;
      }
      if (!state) socket.once('drain', pump);
    };
    pump();
    await waitUntil(() => state !== undefined);
    expect(state!.paused).toBe(true);
    destroy(socket);
  });

  it('fails when the client goes away before the body ends', async () => {
    let outcome: string | undefined;
    const s = await serve(async (req) => {
      let bytes = 0;
      try {
        for await (const c of readAhead(req, 256 * KIB)) bytes += c.length;
        outcome = `ended after ${bytes}`;
      } catch (err) {
        outcome = `failed: ${(err as Error).message}`;
      }
    });
    server = s.server;
    const socket = connect(s.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(`PUT / HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n${'x'.repeat(5000)}`);
    await new Promise((r) => setTimeout(r, 100));
    destroy(socket);
    await waitUntil(() => outcome !== undefined);
    expect(outcome).toMatch(/^failed: /);
  });
});

function destroy(socket: Socket): void {
  socket.destroy();
}

async function waitUntil(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!check()) throw new Error('condition not reached within 5 s');
}
