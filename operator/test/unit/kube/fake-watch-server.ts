/**
 * A fake API server on 127.0.0.1 for watch tests: each watch request gets the next scripted
 * answer (an open stream, an HTTP error status, or an open stream that starts with an in-stream
 * ERROR event); after the script, every request gets an open stream. The test writes events into
 * the newest open stream, resets connections, and stops and restarts the server on its port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One scripted answer. */
export type Answer =
  { kind: 'stream' } | { kind: 'status'; code: number } | { kind: 'error-event'; code: number };

/** A watch request as the server saw it. */
export interface SeenRequest {
  readonly path: string;
  readonly query: Record<string, string>;
}

export class FakeWatchServer {
  readonly requests: SeenRequest[] = [];
  private readonly script: Answer[] = [];
  private readonly sockets = new Set<Socket>();
  private streams: ServerResponse[] = [];
  private server?: Server;
  port = 0;

  /** Queues answers for the next requests. */
  answer(...answers: Answer[]): void {
    this.script.push(...answers);
  }

  /** Listens on `port` (0: a free one, remembered for restarts). */
  async start(port = this.port): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Stops listening and resets every connection (TCP RST), as a killed API server's do. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.resetConnections();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Resets every open connection (TCP RST) mid-stream; the server keeps listening. */
  resetConnections(): void {
    for (const socket of this.sockets) socket.resetAndDestroy();
    this.sockets.clear();
    this.streams = [];
  }

  /** Ends every open stream cleanly (as the API server does at its watch timeout). */
  endStreams(): void {
    for (const res of this.streams) res.end();
    this.streams = [];
  }

  /** Writes one watch event into the newest open stream. */
  send(type: string, object: unknown): void {
    const res = this.streams.at(-1);
    if (!res) throw new Error('no open watch stream to send to');
    res.write(`${JSON.stringify({ type, object })}\n`);
  }

  /** Number of streams open right now. */
  get openStreams(): number {
    return this.streams.filter((s) => !s.writableEnded && !s.destroyed).length;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    this.requests.push({ path: url.pathname, query: Object.fromEntries(url.searchParams) });
    const answer = this.script.shift() ?? { kind: 'stream' };
    if (answer.kind === 'status') {
      res.writeHead(answer.code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status(answer.code)));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    res.on('close', () => (this.streams = this.streams.filter((s) => s !== res)));
    this.streams.push(res);
    if (answer.kind === 'error-event')
      res.write(`${JSON.stringify({ type: 'ERROR', object: status(answer.code) })}\n`);
  }
}

function status(code: number): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    code,
    reason: code === 410 ? 'Expired' : 'InternalError',
    message: code === 410 ? 'too old resource version: 1 (99)' : `fake error ${code}`,
  };
}

/** A SandboxSession as a watch event carries it. */
export function session(name: string, namespace: string, resourceVersion: string): Record<string, unknown> {
  return {
    apiVersion: 'sandbox.dev/v1alpha1',
    kind: 'SandboxSession',
    metadata: { name, namespace, uid: `uid-${name}`, resourceVersion, generation: 1 },
    spec: {},
  };
}

/** Polls `check` every 10 ms until it is true; fails naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
