/**
 * The floor of the port route's download (interactive.bench.ts), through one extra process like
 * the gateway: a node:http server that forwards the request (method, path) to the sandbox's port
 * server and pipes the answer back with its status, content type and length (the gateway passes
 * the length on too, so neither answer is re-chunked). No routing, auth, header filtering,
 * deadlines or limits: the least any HTTP proxy written in Node does for a download with node:http's
 * client. The TCP relay (tcp-pipe.ts) in front of the same server is the floor below it.
 *
 * `raw` (startRawDownloadFloor) is the same proxy with the request written and the answer's head
 * read on a plain socket instead of node:http's client: the body's socket reads are written to
 * the caller as they came. node:http's client copies every body byte into a new Buffer in its
 * parser (on_body); this floor shows what a proxy without that copy reaches.
 *
 * Bench references only: they trust both peers (the raw floor reads only a Content-Length answer
 * without checking its head), which a real gateway must not.
 */
import http from 'node:http';
import net from 'node:net';

import { listenHttpOnLoopback, listenOnLoopback, type Listening } from './listen.js';

/** Starts the floor on 127.0.0.1 in front of the server at `target`. */
export async function startDownloadFloor(target: { host: string; port: number }): Promise<Listening> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const server = http.createServer((req, res) => {
    const up = http.request(
      { host: target.host, port: target.port, method: req.method, path: req.url, agent },
      (ur) => {
        const length = ur.headers['content-length'];
        res.writeHead(ur.statusCode ?? 502, {
          'content-type': ur.headers['content-type'] ?? 'application/octet-stream',
          ...(length !== undefined ? { 'content-length': length } : {}),
        });
        ur.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  return listenHttpOnLoopback(server, agent);
}

/** The proxy above with its upstream side on plain keep-alive sockets (Content-Length answers only). */
export async function startRawDownloadFloor(target: { host: string; port: number }): Promise<Listening> {
  const idle: net.Socket[] = [];
  const sockets = new Set<net.Socket>();
  const connect = (): net.Socket => {
    const s = net.connect({ host: target.host, port: target.port, noDelay: true });
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => {
      sockets.delete(s);
      if (idle.includes(s)) idle.splice(idle.indexOf(s), 1);
    });
    return s;
  };
  const server = http.createServer((req, res) => {
    const s = idle.pop() ?? connect();
    s.write(`${req.method} ${req.url} HTTP/1.1\r\nhost: ${target.host}:${target.port}\r\n\r\n`);
    let head: Buffer | undefined = Buffer.alloc(0);
    let remaining = 0;
    const resume = (): void => void s.resume();
    res.on('drain', resume);
    const onData = (data: Buffer): void => {
      let body = data;
      if (head) {
        head = Buffer.concat([head, data]);
        const at = head.indexOf('\r\n\r\n');
        if (at < 0) return;
        const text = head.toString('latin1', 0, at);
        remaining = Number(/\r\ncontent-length: *(\d+)/i.exec(text)?.[1] ?? 0);
        res.writeHead(Number(text.slice(9, 12)), {
          'content-type': /\r\ncontent-type: *([^\r]*)/i.exec(text)?.[1] ?? 'application/octet-stream',
          'content-length': remaining,
        });
        body = head.subarray(at + 4);
        head = undefined;
      }
      const n = Math.min(body.length, remaining);
      remaining -= n;
      if (n > 0 && !res.write(n === body.length ? body : body.subarray(0, n))) s.pause();
      if (remaining === 0) {
        s.off('data', onData);
        res.off('drain', resume);
        s.resume();
        idle.push(s);
        res.end();
      }
    };
    s.on('data', onData);
    res.on('close', () => {
      if (remaining > 0 || head) s.destroy();
    });
  });
  // close() destroys the upstream sockets and the callers' connections alike.
  server.on('connection', (c: net.Socket) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
  });
  return listenOnLoopback(server, sockets);
}
