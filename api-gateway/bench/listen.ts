/** The listen-and-close part every raw-socket bench reference shares. */
import type http from 'node:http';
import type net from 'node:net';

/** A listening reference and how to stop it. */
export interface Listening {
  url: string;
  close(): Promise<void>;
}

/** Listens on an ephemeral 127.0.0.1 port; close() destroys `sockets` and closes the server. */
export async function listenOnLoopback(server: net.Server, sockets: Set<net.Socket>): Promise<Listening> {
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

/**
 * The same for a node:http proxy reference: close() destroys its upstream keep-alive `agent` and
 * every client connection, then closes the server.
 */
export async function listenHttpOnLoopback(server: http.Server, agent: http.Agent): Promise<Listening> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
