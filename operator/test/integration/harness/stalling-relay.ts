/**
 * A TCP relay in front of the API server that can stall the streams it holds: after stall(), the
 * server's bytes on every connection open at that moment are dropped, while the sockets stay open
 * (TCP keep-alive probes are answered by this process), until the client writes on that connection
 * again. A watch (one request, then only the server's events) therefore goes silent for good with
 * no error, as behind a proxy that stopped forwarding a long-lived stream; a keep-alive connection
 * reused for a new request works again; new connections pass. TLS passes through untouched.
 */
import net from 'node:net';

/** A running relay. */
export interface StallingRelay {
  readonly port: number;
  /** Drops the server's bytes on every connection open now, until its client writes again. */
  stall(): void;
  close(): Promise<void>;
}

/** Starts a relay on 127.0.0.1 to `target`. */
export async function startStallingRelay(target: { host: string; port: number }): Promise<StallingRelay> {
  const pairs = new Set<{ stalled: boolean; sockets: net.Socket[] }>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    const pair = { stalled: false, sockets: [client, upstream] };
    pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket): void => {
      from.on('data', (chunk: Buffer) => {
        if (from === client) pair.stalled = false;
        if (!pair.stalled) to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => {
        to.destroy();
        pairs.delete(pair);
      });
    };
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    stall: () => {
      for (const pair of pairs) pair.stalled = true;
    },
    close: async () => {
      for (const pair of pairs) for (const s of pair.sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
