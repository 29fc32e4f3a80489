/** A local HTTP server standing in for the sandbox agent, scripted per test. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import type { ExecTarget } from '../../src/sessions/model.js';

/** The session the unit tests dial: team-a/demo, its agent on loopback (the fake agent's host). */
export const DEMO_TARGET: ExecTarget = {
  namespace: 'team-a',
  name: 'demo',
  uid: 'uid-1',
  podName: 'sbs-demo',
  podIP: '127.0.0.1',
  transport: 'Agent',
  idleTimeoutSeconds: 1800,
};

/** What the fake agent saw. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

type Handler = (req: SeenRequest, res: http.ServerResponse) => void;

/** The fake agent: `handler` answers; `seen` records every request. */
export class FakeAgent {
  readonly seen: SeenRequest[] = [];
  handler: Handler = (_req, res) => res.end('{}');
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      this.seen.push(seen);
      this.handler(seen, res);
    });
  });

  async start(host = '127.0.0.1'): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, host, resolve));
    return (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Answers JSON with a status. */
export function json(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  type = 'application/json',
): void {
  res.writeHead(status, { 'content-type': type });
  res.end(JSON.stringify(body));
}
