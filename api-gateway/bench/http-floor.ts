/**
 * Two floors of an HTTP hop written in Node, between the TCP relay (tcp-pipe.ts: parses nothing)
 * and the trivial proxy (trivial-proxy.ts: node:http on both sides):
 *
 * - `node-http`: a node:http server (what fastify runs on) that forwards each request body to the
 *   agent over one raw keep-alive socket per client connection, with a head written by hand and an
 *   answer parsed only as far as its status and content-length. No fastify, auth, validation,
 *   logging or metrics: no gateway built on node:http can be faster than this.
 * - `fastify`: the node:http floor with fastify 5 (default options, no logger) routing the request
 *   and reading its body as bytes: no gateway built on fastify can be faster than this.
 * - `raw`: the same forwarding on raw sockets on both sides, parsing only the request line's end,
 *   the head's end and content-length: no Node process that reads HTTP at all can be faster.
 *
 * Bench references only: they trust both peers (no limits, no chunked bodies, no pipelining
 * checks), which a real gateway must not.
 */
import http from 'node:http';
import net from 'node:net';

import Fastify from 'fastify';

import { listenOnLoopback, type Listening } from './listen.js';

/** Which server reads the client's requests. */
export type FloorInbound = 'node-http' | 'fastify' | 'raw';

const HEAD_END = Buffer.from('\r\n\r\n');

/** One HTTP/1.1 message (head + content-length body) cut off the front of a byte stream. */
interface Message {
  head: string;
  body: Buffer;
}

/** Accumulates bytes and yields complete messages (content-length framed). */
class MessageReader {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer, onMessage: (m: Message) => void): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    for (;;) {
      const end = this.buf.indexOf(HEAD_END);
      if (end < 0) return;
      const head = this.buf.toString('latin1', 0, end);
      const m = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
      const start = end + HEAD_END.length;
      const stop = start + (m ? Number(m[1]) : 0);
      if (this.buf.length < stop) return;
      const body = this.buf.subarray(start, stop);
      this.buf = this.buf.subarray(stop);
      onMessage({ head, body });
    }
  }
}

/** A raw keep-alive connection to the agent that sends a body and hands back the answer. */
function upstream(target: { host: string; port: number; token: string }): {
  send(body: Buffer, onAnswer: (status: number, body: Buffer) => void): void;
  destroy(): void;
} {
  const socket = net.connect({ host: target.host, port: target.port, noDelay: true });
  socket.on('error', () => undefined);
  const waiting: Array<(status: number, body: Buffer) => void> = [];
  const reader = new MessageReader();
  socket.on('data', (chunk: Buffer) =>
    reader.push(chunk, ({ head, body }) => waiting.shift()?.(Number(head.slice(9, 12)), body)),
  );
  const prefix = `POST /v1/exec HTTP/1.1\r\nhost: agent\r\nauthorization: Bearer ${target.token}\r\ncontent-type: application/json\r\ncontent-length: `;
  return {
    send(body, onAnswer) {
      waiting.push(onAnswer);
      socket.write(Buffer.concat([Buffer.from(`${prefix}${body.length}\r\n\r\n`, 'latin1'), body]));
    },
    destroy: () => socket.destroy(),
  };
}

/** Starts a floor reference on 127.0.0.1 in front of `target`. */
export async function startHttpFloor(
  target: { host: string; port: number; token: string },
  inbound: FloorInbound,
): Promise<Listening> {
  type Upstream = ReturnType<typeof upstream>;
  const sockets = new Set<net.Socket>();
  /** The agent connection paired with a client connection, opened on its first request. */
  const ups = new WeakMap<net.Socket, Upstream>();
  const upFor = (client: net.Socket): Upstream => {
    let up = ups.get(client);
    if (!up) {
      const opened = upstream(target);
      ups.set(client, opened);
      sockets.add(client);
      client.on('close', () => {
        sockets.delete(client);
        opened.destroy();
      });
      up = opened;
    }
    return up;
  };
  let server: net.Server;
  if (inbound === 'fastify') {
    const app = Fastify();
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) =>
      done(null, body),
    );
    app.post('/*', (req, reply) => {
      upFor(req.raw.socket).send(
        req.body as Buffer,
        (status, answer) => void reply.code(status).type('application/json').send(answer),
      );
      return reply;
    });
    await app.ready();
    server = app.server;
  } else if (inbound === 'node-http') {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () =>
        upFor(req.socket).send(Buffer.concat(chunks), (status, answer) => {
          res.writeHead(status, { 'content-type': 'application/json', 'content-length': answer.length });
          res.end(answer);
        }),
      );
    });
  } else {
    server = net.createServer({ noDelay: true }, (client) => {
      const up = upFor(client);
      client.on('error', () => undefined);
      const reader = new MessageReader();
      client.on('data', (chunk: Buffer) =>
        reader.push(chunk, ({ body }) =>
          up.send(body, (status, answer) =>
            client.write(
              Buffer.concat([
                Buffer.from(
                  `HTTP/1.1 ${status} OK\r\ncontent-type: application/json\r\ncontent-length: ${answer.length}\r\n\r\n`,
                  'latin1',
                ),
                answer,
              ]),
            ),
          ),
        ),
      );
    });
  }
  return listenOnLoopback(server, sockets);
}
