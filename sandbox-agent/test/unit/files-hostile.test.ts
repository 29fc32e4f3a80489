/**
 * The files API against a workspace the sandbox's own processes shape: special files never block
 * the agent, and a GET sends exactly the announced bytes whatever happens to the file meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFile, lstat, truncate, writeFile } from 'node:fs/promises';
import { createServer, type Server, connect, type Socket } from 'node:net';
import { join } from 'node:path';

import { problemOf, TestAgent } from './helpers/test-agent.js';

/** Opens `fifo` for writing from another process for a moment, releasing any reader blocked on it. */
function releaseFifo(fifo: string): void {
  spawn('timeout', ['2', 'sh', '-c', `: > '${fifo}'`], { stdio: 'ignore' }).unref();
}

/** A raw HTTP/1.1 exchange on one keep-alive connection, reading at the pace the test decides. */
class RawConnection {
  private readonly socket: Socket;
  /** Received and not yet taken, as chunks (joining on every chunk would be quadratic). */
  private chunks: Buffer[] = [];
  private size = 0;
  private closed = false;
  private readonly waiters: (() => void)[] = [];

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('data', (c: Buffer) => {
      this.chunks.push(c);
      this.size += c.length;
      this.wake();
    });
    this.socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    this.socket.on('error', () => undefined);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  send(text: string): void {
    this.socket.write(text);
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** Waits until `n` bytes are buffered (or the connection closed); returns and removes up to `n`. */
  async take(n: number): Promise<Buffer> {
    while (this.size < n && !this.closed) await new Promise<void>((r) => this.waiters.push(r));
    const all = this.joined();
    const out = all.subarray(0, n);
    this.keep(all.subarray(out.length));
    return out;
  }

  private joined(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  private keep(rest: Buffer): void {
    this.chunks = rest.length > 0 ? [rest] : [];
    this.size = rest.length;
  }

  /** Reads a response head; returns its Content-Length. */
  async head(): Promise<{ status: number; length: number }> {
    for (;;) {
      const all = this.joined();
      this.keep(all);
      const end = all.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = all.subarray(0, end).toString();
        this.keep(all.subarray(end + 4));
        return {
          status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]),
          length: Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]),
        };
      }
      if (this.closed) throw new Error('closed before a response head');
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** Waits for the connection to close; returns what was left unread. */
  async rest(): Promise<Buffer> {
    this.resume();
    while (!this.closed) await new Promise<void>((r) => this.waiters.push(r));
    return this.joined();
  }

  end(): void {
    this.socket.destroy();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

describe('files API against a hostile workspace', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start();
  });
  afterAll(async () => {
    await agent.stop();
  });

  const get = (path: string) => agent.send({ method: 'GET', path });
  const request = (method: string, path: string): string =>
    `${method} ${path} HTTP/1.1\r\nhost: agent\r\nauthorization: Bearer ${agent.token}\r\n\r\n`;

  it('refuses GETs of a FIFO at once (more than libuv has threads), and exec and its deadline keep working', async () => {
    // Regression: open(2) of a FIFO blocked one I/O thread per GET; after 4, every file call and
    // the /proc reads of the timeout kill waited forever while /healthz said 200.
    await agent.sh('mkfifo pipe');
    try {
      const answers = await Promise.all(Array.from({ length: 6 }, () => get('/v1/files/pipe')));
      for (const res of answers) {
        expect(res.status).toBe(400);
        expect(problemOf(res)).toMatchObject({
          type: 'https://sandbox.dev/problems/invalid-request',
          detail: 'the path is a named pipe (FIFO), not a regular file',
        });
      }
      const timedOut = await agent.exec({ command: 'sleep 30', timeoutSeconds: 1 });
      expect(timedOut).toMatchObject({ timedOut: true, exitCode: 124 });
      expect((await get('/v1/files/pipe-missing')).status).toBe(404);
    } finally {
      releaseFifo(join(agent.workspace, 'pipe'));
    }
  }, 20_000);

  it('refuses a FIFO reached through a symlink inside the workspace', async () => {
    await agent.sh('mkfifo pipe2 && ln -s pipe2 pipe-link');
    try {
      const res = await get('/v1/files/pipe-link');
      expect(res.status).toBe(400);
      expect(problemOf(res).detail).toMatch(/FIFO/);
    } finally {
      releaseFifo(join(agent.workspace, 'pipe2'));
    }
  });

  it('refuses a PUT onto a FIFO and leaves the FIFO as it was', async () => {
    await agent.sh('mkfifo put-pipe');
    const res = await agent.send({ method: 'PUT', path: '/v1/files/put-pipe', body: 'data' });
    expect(res.status).toBe(400);
    expect(problemOf(res).detail).toBe('the path is a named pipe (FIFO), not a regular file');
    expect((await lstat(join(agent.workspace, 'put-pipe'))).isFIFO()).toBe(true);
  });

  it('refuses GET and PUT of a unix socket', async () => {
    const path = join(agent.workspace, 'sock');
    const server: Server = createServer();
    server.listen(path);
    await once(server, 'listening');
    try {
      for (const res of [
        await get('/v1/files/sock'),
        await agent.send({ method: 'PUT', path: '/v1/files/sock', body: 'x' }),
      ]) {
        expect(res.status).toBe(400);
        expect(problemOf(res).detail).toBe('the path is a socket, not a regular file');
      }
    } finally {
      server.close();
    }
  });

  it('sends exactly Content-Length bytes of a file that grows during the GET; the connection stays usable', async () => {
    // Regression: the read went on to end-of-file, so the bytes appended after the size was taken
    // followed the announced body and were read as the start of the next response.
    const size = 32 * 1024 * 1024;
    const file = join(agent.workspace, 'growing.bin');
    await writeFile(file, Buffer.alloc(size, 0x61));
    const conn = new RawConnection(agent.running.port);
    try {
      conn.send(request('GET', '/v1/files/growing.bin'));
      const head = await conn.head();
      conn.pause(); // the agent blocks on backpressure long before it reaches the end
      expect(head).toEqual({ status: 200, length: size });
      await appendFile(file, Buffer.alloc(1024 * 1024, 0x62));
      conn.resume();
      const body = await conn.take(size);
      expect(body.length).toBe(size);
      expect(body.includes(0x62)).toBe(false);
      conn.send(request('GET', '/healthz'));
      const next = await conn.head();
      expect(next.status).toBe(200);
    } finally {
      conn.end();
    }
  }, 30_000);

  it('cuts the connection when the file shrinks during the GET, instead of leaving the client waiting', async () => {
    const size = 32 * 1024 * 1024;
    const file = join(agent.workspace, 'shrinking.bin');
    await writeFile(file, Buffer.alloc(size, 0x61));
    const conn = new RawConnection(agent.running.port);
    try {
      conn.send(request('GET', '/v1/files/shrinking.bin'));
      const head = await conn.head();
      conn.pause();
      expect(head).toEqual({ status: 200, length: size });
      await truncate(file, 1024);
      const received = await conn.rest();
      expect(conn.isClosed).toBe(true);
      expect(received.length).toBeLessThan(size);
    } finally {
      conn.end();
    }
    expect(agent.logs.some((l) => l.includes('the file shrank while it was sent'))).toBe(true);
  }, 30_000);

  it('serves an empty file with Content-Length 0', async () => {
    await writeFile(join(agent.workspace, 'empty.bin'), '');
    const res = await get('/v1/files/empty.bin');
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe('0');
    expect(res.body).toHaveLength(0);
  });
});
