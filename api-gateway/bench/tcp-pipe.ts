/**
 * The floor of any process in the path: a TCP relay that copies bytes both ways between each
 * client connection and its own connection to the agent, without parsing HTTP at all (the client
 * sends the agent's path and token itself). No proxy that reads requests can cost less; what it
 * costs over a direct call is the extra process on the path (its wake-ups, reads and writes, and
 * the kernel's work for two more TCP sends per call).
 */
import net from 'node:net';

import { listenOnLoopback, type Listening } from './listen.js';

/** Starts a relay on 127.0.0.1 to `target`. */
export async function startTcpPipe(target: { host: string; port: number }): Promise<Listening> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ noDelay: true }, (client) => {
    const upstream = net.connect({ host: target.host, port: target.port, noDelay: true });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined); // the 'close' below ends the other side
    }
    client.on('data', (d: Buffer) => upstream.write(d));
    upstream.on('data', (d: Buffer) => client.write(d));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  return listenOnLoopback(server, sockets);
}
