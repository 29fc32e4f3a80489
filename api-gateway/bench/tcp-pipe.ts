/**
 * The floor of any process in the path: a TCP relay that copies bytes both ways between each
 * client connection and its own connection to the agent, without parsing HTTP at all (the client
 * sends the agent's path and token itself). No proxy that reads requests can cost less; what it
 * costs over a direct call is the extra process on the path (its wake-ups, reads and writes, and
 * the kernel's work for two more TCP sends per call).
 */
import net from 'node:net';

/** A running relay and how to stop it. */
export interface TcpPipe {
  url: string;
  close(): Promise<void>;
}

/** Starts a relay on 127.0.0.1 to `target`. */
export async function startTcpPipe(target: { host: string; port: number }): Promise<TcpPipe> {
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
