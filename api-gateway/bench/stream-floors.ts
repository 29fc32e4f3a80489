/**
 * Floors of a streamed exec answer (POST /v1/exec/stream) through one extra process, for the
 * interactive benchmark (interactive.bench.ts); the TCP relay (tcp-pipe.ts) is the floor below
 * both:
 *
 * - `http`: a node:http server that forwards the request (path, body) to the agent with the
 *   agent's token and pipes the agent's answer back as it comes. No routing, auth, validation or
 *   limits: the floor of any HTTP proxy written in Node.
 * - `ndjson`: the `http` floor with the answer cut into lines, each line JSON.parse'd and
 *   JSON.stringify'd: the floor of any proxy that re-serializes the agent's events (the gateway
 *   does, since the agent's output is hostile input it must check and bound), without any check.
 *
 * Bench references only: they trust both peers, which a real gateway must not.
 */
import http from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';

import { listenHttpOnLoopback, type Listening } from './listen.js';
import type { AgentTarget } from './references.js';

/** What the floor does with the agent's answer. */
export type StreamFloor = 'http' | 'ndjson';

const NEWLINE = 0x0a;

/** NDJSON in, the same events out: split, JSON.parse, JSON.stringify; no checks, no bounds. */
class Reserialize extends Transform {
  /** The start of a line that did not end in its chunk (kept as a list: no quadratic copying). */
  private readonly rest: Buffer[] = [];

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
      const piece = chunk.subarray(start, nl);
      const line = this.rest.length > 0 ? Buffer.concat([...this.rest.splice(0), piece]) : piece;
      this.push(JSON.stringify(JSON.parse(line.toString('utf8'))) + '\n');
      start = nl + 1;
    }
    if (start < chunk.length) this.rest.push(chunk.subarray(start));
    cb();
  }
}

/** Starts a streaming floor on 127.0.0.1 in front of `target`. */
export async function startStreamFloor(target: AgentTarget, kind: StreamFloor): Promise<Listening> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const server = http.createServer((req, res) => {
    const up = http.request(
      {
        host: target.host,
        port: target.port,
        method: req.method,
        path: req.url,
        agent,
        headers: {
          authorization: `Bearer ${target.token}`,
          'content-type': req.headers['content-type'] ?? 'application/json',
          ...(req.headers['content-length'] ? { 'content-length': req.headers['content-length'] } : {}),
        },
      },
      (ur) => {
        res.writeHead(ur.statusCode ?? 502, { 'content-type': ur.headers['content-type'] ?? 'text/plain' });
        (kind === 'ndjson' ? ur.pipe(new Reserialize()) : ur).pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  return listenHttpOnLoopback(server, agent);
}
