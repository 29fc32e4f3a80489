/**
 * A server "in the sandbox" for the port-route tests (the session's pod IP is 127.0.0.1): HTTP
 * answered by the given handler, and a WebSocket echo on the same port.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { WebSocketServer } from 'ws';

export interface SandboxServer {
  port: number;
  /** The HTTP server (tests watch its connections). */
  server: http.Server;
  close(): Promise<void>;
}

export async function startSandboxServer(handler: http.RequestListener): Promise<SandboxServer> {
  const server = http.createServer(handler);
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    server,
    close: async () => {
      wss.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
