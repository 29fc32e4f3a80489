/**
 * A streaming client for tests: sends an NDJSON request body line by line while reading the NDJSON
 * answer as it arrives (full duplex over one HTTP/1.1 request), as the gateway does for stdin.
 */
import { type ClientRequest, type IncomingMessage, request } from 'node:http';

import type { TestAgent } from './test-agent.js';

/** One NDJSON line of an answer. */
export type Event = Record<string, unknown> & { type: string };

/** An open streamed call. */
export class NdjsonCall {
  readonly events: Event[] = [];
  /** Resolves with the status once the answer's headers arrived. */
  readonly response: Promise<IncomingMessage>;
  /** Resolves when the answer ended (or the connection broke). */
  readonly done: Promise<void>;
  private waiters: Array<() => void> = [];
  private body = '';

  private constructor(readonly req: ClientRequest) {
    let ended!: () => void;
    this.done = new Promise((resolve) => (ended = resolve));
    this.response = new Promise((resolve, reject) => {
      req.on('response', (res) => {
        resolve(res);
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          this.body += text;
          buffered += text;
          for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
            const line = buffered.slice(0, nl);
            buffered = buffered.slice(nl + 1);
            if (res.headers['content-type'] === 'application/x-ndjson')
              this.events.push(JSON.parse(line) as Event);
          }
          this.wake();
        });
        res.on('end', () => {
          ended();
          this.wake();
        });
        res.on('error', () => ended());
      });
      req.on('error', (err) => {
        reject(err);
        ended();
      });
    });
  }

  /** Opens `POST path` with the given content type (NDJSON by default); the body stays open. */
  static open(agent: TestAgent, path = '/v1/exec/stream', contentType = 'application/x-ndjson'): NdjsonCall {
    const req = request({
      host: '127.0.0.1',
      port: agent.running.port,
      method: 'POST',
      path,
      headers: { authorization: `Bearer ${agent.token}`, 'content-type': contentType },
    });
    req.flushHeaders();
    return new NdjsonCall(req);
  }

  /** Opens `GET path` (a followed stream). */
  static get(agent: TestAgent, path: string): NdjsonCall {
    const req = request({
      host: '127.0.0.1',
      port: agent.running.port,
      method: 'GET',
      path,
      headers: { authorization: `Bearer ${agent.token}` },
    });
    req.end();
    return new NdjsonCall(req);
  }

  /** Writes one JSON line; resolves when the socket took it (false: it had to wait for drain). */
  send(value: unknown): Promise<boolean> {
    return this.raw(`${JSON.stringify(value)}\n`);
  }

  /** Writes raw text; resolves once written or drained. */
  raw(text: string | Buffer): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.req.write(text)) resolve(true);
      else this.req.once('drain', () => resolve(false));
    });
  }

  /** Ends the request body. */
  end(): void {
    this.req.end();
  }

  /** The whole answer body as text so far. */
  get text(): string {
    return this.body;
  }

  /** The decoded bytes of one stream's output events so far. */
  output(stream: 'stdout' | 'stderr'): Buffer {
    return Buffer.concat(
      this.events
        .filter((e) => e.type === stream)
        .map((e) => Buffer.from(String(e.data), e.encoding === 'base64' ? 'base64' : 'utf8')),
    );
  }

  /** Resolves once `check` holds (checked at every answer chunk); rejects after `ms`. */
  async until(what: string, check: () => boolean, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`timed out waiting for: ${what}; answer so far: ${this.body.slice(0, 500)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
