/**
 * The floor of one extra HTTP hop in Node: a proxy that does nothing but read the request body,
 * POST it to the agent over a keep-alive pool with the agent's token, read the answer and write it
 * back. No routing, auth, validation, logging, metrics or deadlines. Whatever the gateway costs
 * above this is its own work; the hop itself (a second HTTP parse and write on each side, and the
 * kernel's loopback path) is not avoidable by any proxy.
 */
import http from 'node:http';

import { listenHttpOnLoopback, type Listening } from './listen.js';

/** Starts a proxy on 127.0.0.1 forwarding every request to `target` (path and body as they came). */
export async function startTrivialProxy(target: {
  host: string;
  port: number;
  token: string;
}): Promise<Listening> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 4000 });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const up = http.request(
        {
          host: target.host,
          port: target.port,
          method: 'POST',
          path: '/v1/exec',
          agent,
          headers: {
            authorization: `Bearer ${target.token}`,
            'content-type': 'application/json',
            'content-length': body.length,
          },
        },
        (ur) => {
          const out: Buffer[] = [];
          ur.on('data', (c: Buffer) => out.push(c));
          ur.on('end', () => {
            const answer = Buffer.concat(out);
            res.writeHead(ur.statusCode ?? 502, {
              'content-type': 'application/json',
              'content-length': answer.length,
            });
            res.end(answer);
          });
        },
      );
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  return listenHttpOnLoopback(server, agent);
}
