/**
 * The sandboxes' DNS on the wire: UDP and TCP on one port (the Service maps 53 to it, so the proxy
 * runs without privileges). UDP answers fit 512 bytes (a larger one is truncated with TC set);
 * TCP carries two-byte length-prefixed messages (RFC 1035 4.2.2), bounded in size, connections
 * and idle time, because the senders are sandboxes.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';

import { plainAddress } from '../sessions.js';
import type { DnsResponder } from './responder.js';
import { MAX_QUERY_BYTES } from './wire.js';

/** Limits of the TCP side. */
const TCP_IDLE_MS = 10_000;
const TCP_MAX_CONNECTIONS = 256;
const TCP_MAX_ANSWER_BYTES = 4096;

/** The two servers, started and stopped together. */
export interface DnsServers {
  udp: UdpSocket;
  tcp: Server;
  close(): Promise<void>;
}

/** Starts UDP (IPv4) and TCP listeners on `port` of `host`. */
export async function startDnsServers(
  responder: DnsResponder,
  port: number,
  host: string,
  onError: (msg: string, err: unknown) => void,
): Promise<DnsServers> {
  const udp = createSocket({ type: 'udp4' });
  udp.on('message', (msg, rinfo) => {
    responder.answer(msg, plainAddress(rinfo.address)).then(
      (out) => out && udp.send(out, rinfo.port, rinfo.address),
      (err: unknown) => onError('dns answer failed', err),
    );
  });
  udp.on('error', (err) => onError('dns udp socket', err));
  await new Promise<void>((resolve, reject) => {
    udp.once('error', reject);
    udp.bind(port, host, () => {
      udp.off('error', reject);
      resolve();
    });
  });

  const tcp = createServer((socket) => serveTcp(socket, responder, onError));
  tcp.maxConnections = TCP_MAX_CONNECTIONS;
  tcp.on('error', (err) => onError('dns tcp server', err));
  await new Promise<void>((resolve) => tcp.listen(port, host, resolve));
  return {
    udp,
    tcp,
    close: () =>
      new Promise<void>((resolve) => {
        udp.close();
        tcp.close(() => resolve());
      }),
  };
}

function serveTcp(
  socket: Socket,
  responder: DnsResponder,
  onError: (msg: string, err: unknown) => void,
): void {
  const source = plainAddress(socket.remoteAddress);
  socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
  socket.on('error', () => socket.destroy());
  let buffered = Buffer.alloc(0);
  let busy = false;
  const next = (): void => {
    if (busy || buffered.length < 2) return;
    const len = buffered.readUInt16BE(0);
    if (len === 0 || len > MAX_QUERY_BYTES) {
      socket.destroy();
      return;
    }
    if (buffered.length < 2 + len) return;
    const msg = buffered.subarray(2, 2 + len);
    buffered = buffered.subarray(2 + len);
    busy = true;
    socket.pause();
    responder.answer(Buffer.from(msg), source, TCP_MAX_ANSWER_BYTES).then(
      (out) => {
        busy = false;
        if (socket.destroyed) return;
        if (!out) return socket.destroy();
        const prefix = Buffer.alloc(2);
        prefix.writeUInt16BE(out.length);
        socket.write(Buffer.concat([prefix, out]));
        socket.resume();
        next();
      },
      (err: unknown) => {
        onError('dns answer failed', err);
        socket.destroy();
      },
    );
  };
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    if (buffered.length > 2 * (2 + MAX_QUERY_BYTES)) {
      // Two queries may be in flight (glibc sends A and AAAA back to back); more is cut.
      socket.destroy();
      return;
    }
    next();
  });
}
