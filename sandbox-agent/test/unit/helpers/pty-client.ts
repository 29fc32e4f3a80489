/**
 * The terminal for tests: compiles the sandbox-pty helper from its C source with the host's gcc
 * (as the image build does, without -static), and a WebSocket client of GET /v1/pty.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { afterAll } from '@jest/globals';
import WebSocket from 'ws';

import type { TestAgent } from './test-agent.js';

const here = dirname(fileURLToPath(import.meta.url));

/** The helper's source (the image's, test-e2e/images/src). */
export const HELPER_SOURCE = join(here, '../../../../test-e2e/images/src/sandbox-pty.c');

let built: Promise<string> | undefined;

// Registered in every test file that imports this module; removes what buildPtyHelper made.
afterAll(async () => {
  if (built) await rm(dirname(await built), { recursive: true, force: true });
});

/**
 * Compiles the helper into a temp directory, once per test file; returns its path. The
 * directory is removed after the file's tests (the hook below).
 */
export function buildPtyHelper(): Promise<string> {
  built ??= (async () => {
    const out = join(await mkdtemp(join(tmpdir(), 'sbx-pty-')), 'sandbox-pty');
    await promisify(execFile)('gcc', ['-O1', '-Wall', '-Wextra', '-Werror', '-o', out, HELPER_SOURCE]);
    return out;
  })();
  return built;
}

/** How the connection ended. */
export interface Closed {
  code: number;
  reason: string;
}

/** An open terminal. */
export class PtyClient {
  private bytes: Buffer[] = [];
  readonly texts: string[] = [];
  readonly closed: Promise<Closed>;
  private waiters: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.wake();
      });
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) this.bytes.push(data);
      else this.texts.push(data.toString());
      this.wake();
    });
  }

  /** Opens `GET /v1/pty?query`; resolves once upgraded, rejects with the HTTP status otherwise. */
  static open(
    agent: TestAgent,
    query = '',
    token = agent.token,
    path = '/v1/pty',
    headers: Record<string, string> = {},
  ): Promise<PtyClient> {
    const ws = new WebSocket(`ws://127.0.0.1:${agent.running.port}${path}${query}`, {
      headers: { ...headers, authorization: `Bearer ${token}` },
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new PtyClient(ws)));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () =>
          reject(new RefusedUpgrade(res.statusCode ?? 0, res.headers['content-type'], body)),
        );
      });
      ws.once('error', reject);
    });
  }

  /** Everything the terminal printed so far. */
  get output(): string {
    return Buffer.concat(this.bytes).toString('utf8');
  }

  /** Total bytes received. */
  get received(): number {
    return this.bytes.reduce((n, b) => n + b.length, 0);
  }

  /** Types text into the terminal. */
  type(text: string): void {
    this.ws.send(Buffer.from(text), { binary: true });
  }

  /** Sends a control message. */
  control(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Waits until `check` holds (checked at every message). */
  async until(what: string, check: () => boolean, ms = 8000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`timed out waiting for: ${what}; output: ${JSON.stringify(this.output.slice(-400))}`);
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

/** The agent refused the upgrade with a plain HTTP answer. */
export class RefusedUpgrade extends Error {
  constructor(
    readonly status: number,
    readonly contentType: string | undefined,
    readonly body: string,
  ) {
    super(`upgrade refused with ${status}: ${body}`);
  }
}
