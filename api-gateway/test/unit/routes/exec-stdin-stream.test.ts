/**
 * Streamed stdin through `POST /v1/sessions/{name}/exec/stream` (issue 15): an NDJSON request
 * body, the exec request on its first line and stdin lines after it, forwarded to a real
 * in-process agent as they arrive. Bounds: a bad request line is a 400 before the agent is called;
 * an oversized, malformed or over-budget stdin line cuts the stream (no exit event: the documented
 * form of a stream that broke) and the agent stops the command; a caller that goes away mid-stdin
 * leaves no process behind.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { SandboxClient, eventBytes, type ExecStreamEvent } from '../../../../sdk/typescript/src/index.js';
import { KEYS, auth } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';

const STDIN_CAP = 64 * 1024;

interface Event {
  type: string;
  data?: string;
  encoding?: 'utf-8' | 'base64';
  exitCode?: number;
  stdinError?: string;
  truncated?: boolean;
}

/** What came back: status, the events, stdout decoded, and whether the body ended whole. */
interface Answer {
  status: number;
  contentType: string;
  events: Event[];
  stdout: Buffer;
  complete: boolean;
  raw: string;
}

/** A streamed exec: write stdin lines to `req`, read the answer from `answer`. */
interface Call {
  req: http.ClientRequest;
  /** Resolves with the response head (the events are read into `answer`). */
  head: Promise<http.IncomingMessage>;
  answer: Promise<Answer>;
  /** Resolves once a stdout event containing `text` arrived. */
  stdoutSeen(text: string): Promise<void>;
}

function line(value: unknown): string {
  return JSON.stringify(value) + '\n';
}

function stdinLine(data: Buffer | string): string {
  return typeof data === 'string'
    ? line({ type: 'stdin', data })
    : line({ type: 'stdin', data: data.toString('base64'), encoding: 'base64' });
}

describe('POST /v1/sessions/{name}/exec/stream with streamed stdin', () => {
  let g: AgentApp;

  beforeAll(async () => {
    g = await startAgentApp({ env: { GATEWAY_MAX_EXEC_STDIN_STREAM_BYTES: String(STDIN_CAP * 32) } });
  });
  afterAll(() => g.close());

  function open(request: unknown, path = '/v1/sessions/demo/exec/stream'): Call {
    const req = http.request(g.url + path, {
      method: 'POST',
      headers: { ...auth(KEYS.a), 'content-type': 'application/x-ndjson' },
    });
    req.on('error', () => undefined); // a cut connection is read from the answer
    let text = '';
    const waiters: Array<{ text: string; resolve: () => void }> = [];
    const head = new Promise<http.IncomingMessage>((resolve, reject) => {
      req.once('response', resolve);
      req.once('error', reject);
    });
    const answer = head.then(
      (res) =>
        new Promise<Answer>((resolve) => {
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
            for (const w of waiters.splice(0)) {
              if (stdoutOf(text).toString('utf8').includes(w.text)) w.resolve();
              else waiters.push(w);
            }
          });
          res.on('error', () => undefined);
          res.once('close', () =>
            resolve({
              status: res.statusCode ?? 0,
              contentType: String(res.headers['content-type']),
              events: parseEvents(text),
              stdout: stdoutOf(text),
              complete: res.complete,
              raw: text,
            }),
          );
        }),
    );
    req.write(typeof request === 'string' ? request : line(request));
    return {
      req,
      head,
      answer,
      stdoutSeen: (t) =>
        new Promise<void>((resolve) => {
          if (stdoutOf(text).toString('utf8').includes(t)) resolve();
          else waiters.push({ text: t, resolve });
        }),
    };
  }

  function parseEvents(text: string): Event[] {
    const lines = text.split('\n').filter((l) => l.length > 0);
    const events: Event[] = [];
    for (const l of lines) {
      try {
        events.push(JSON.parse(l) as Event);
      } catch {
        // a cut stream may end in a partial line
      }
    }
    return events;
  }

  function stdoutOf(text: string): Buffer {
    return Buffer.concat(
      parseEvents(text)
        .filter((e) => e.type === 'stdout')
        .map((e) => Buffer.from(e.data ?? '', e.encoding === 'base64' ? 'base64' : 'utf8')),
    );
  }

  /** Writes with backpressure (awaits 'drain' when the socket buffer is full, or the close). */
  async function write(req: http.ClientRequest, text: string): Promise<void> {
    if (req.destroyed || req.writableEnded) return;
    if (!req.write(text)) {
      await new Promise<void>((r) => {
        const done = (): void => {
          req.off('drain', done);
          req.off('close', done);
          r();
        };
        req.once('drain', done);
        req.once('close', done);
      });
    }
  }

  /**
   * The command's process, found by a marker in its arguments (the agent runs on this host). The
   * commands are `bash -c 'cat; true' <marker>`: two commands, so bash does not exec cat and keeps
   * the marker in its own arguments while cat runs.
   */
  async function running(marker: string): Promise<boolean> {
    try {
      await promisify(execFile)('pgrep', ['-f', marker]);
      return true;
    } catch {
      return false; // pgrep exits 1 when nothing matches
    }
  }

  async function until(check: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 200; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for: ${what}`);
  }

  it('streams 1 MiB of random binary stdin to cat and back byte-exact', async () => {
    const data = randomBytes(1024 * 1024);
    const call = open({ command: 'cat', timeoutSeconds: 60 });
    for (let at = 0; at < data.length; at += 48 * 1024) {
      await write(call.req, stdinLine(data.subarray(at, at + 48 * 1024)));
    }
    call.req.end(line({ type: 'close' }));
    const a = await call.answer;
    expect(a.status).toBe(200);
    expect(a.contentType).toContain('application/x-ndjson');
    const exit = a.events.at(-1);
    expect(exit).toMatchObject({ type: 'exit', exitCode: 0, truncated: false });
    expect(exit?.stdinError).toBeUndefined();
    expect(a.stdout.length).toBe(data.length);
    expect(a.stdout.equals(data)).toBe(true);
  });

  it('counts streamed stdin with python3 (the end of the body is EOF, no close line needed)', async () => {
    const call = open({ command: `python3 -c 'import sys; print(len(sys.stdin.read()))'` });
    for (let i = 0; i < 500; i++) await write(call.req, stdinLine('0123456789\n'));
    call.req.end();
    const a = await call.answer;
    expect(a.events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0 });
    expect(a.stdout.toString('utf8')).toBe('5500\n');
  });

  it('hands each line to the command as it arrives: head -n1 answers before stdin ends', async () => {
    const call = open({ command: 'head -n1' });
    call.req.write(stdinLine('first\n'));
    // stdin is still open: the output (and the exit) can only come from the first line.
    await call.stdoutSeen('first\n');
    const a = await call.answer;
    expect(a.stdout.toString('utf8')).toBe('first\n');
    expect(a.events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0 });
    call.req.destroy();
  });

  it('accepts many small lines arriving over time', async () => {
    const call = open({ command: 'cat' });
    for (let i = 0; i < 20; i++) {
      call.req.write(stdinLine(`line ${i}\n`));
      await call.stdoutSeen(`line ${i}\n`); // echoed before the next is sent
    }
    call.req.end(line({ type: 'close' }));
    const a = await call.answer;
    expect(a.stdout.toString('utf8')).toBe(Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join(''));
    expect(a.events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0 });
  });

  it('the TypeScript SDK streams an async iterable as stdin (execStream)', async () => {
    const client = new SandboxClient({ baseUrl: g.url, apiKey: KEYS.a });
    const data = randomBytes(700 * 1024);
    async function* stdin(): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < data.length; at += 100 * 1024) {
        await new Promise((r) => setImmediate(r)); // produced over time, as a real source would
        yield data.subarray(at, at + 100 * 1024);
      }
    }
    const events: ExecStreamEvent[] = [];
    for await (const e of client.execStream('demo', { command: 'cat', stdin: stdin() })) events.push(e);
    const out = Buffer.concat(events.flatMap((e) => (e.type === 'exit' ? [] : [eventBytes(e)])));
    expect(events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0 });
    expect(out.equals(data)).toBe(true);
  });

  it('answers 400 for a malformed request line, before the agent is called', async () => {
    const begun = g.activity.begun;
    const firsts = [
      '{"command": ',
      '{"command":"cat","bogus":1}',
      '{"command":""}',
      '{"command":"cat","waitSeconds":100000}',
      '[]',
      '',
    ];
    for (const first of firsts) {
      const call = open(first + '\n');
      call.req.end(stdinLine('x'));
      const a = await call.answer;
      expect({ first, status: a.status }).toEqual({ first, status: 400 });
      expect(a.contentType).toContain('application/problem+json');
      expect(JSON.parse(a.raw)).toMatchObject({ type: expect.stringContaining('invalid-request') });
    }
    // Refused by the gateway itself: no exec began (the session was never even looked up).
    expect(g.activity.begun).toBe(begun);
  });

  it('answers 400 for stdin inside the request line (it comes as lines)', async () => {
    const call = open({ command: 'cat', stdin: 'x' });
    call.req.end();
    const a = await call.answer;
    expect(a.status).toBe(400);
    expect(a.raw).toContain('invalid-request');
  });

  it('documents the NDJSON body of exec/stream in /openapi.json (only there)', async () => {
    const res = await g.app.inject({ method: 'GET', url: '/openapi.json' });
    type Op = { requestBody: { content: Record<string, { schema: { description?: string } }> } };
    const paths = res.json<{ paths: Record<string, { post: Op }> }>().paths;
    const stream = paths['/v1/sessions/{name}/exec/stream']!.post.requestBody.content;
    expect(Object.keys(stream).sort()).toEqual(['application/json', 'application/x-ndjson']);
    expect(stream['application/x-ndjson']!.schema.description).toContain('{"type":"close"}');
    expect(Object.keys(paths['/v1/sessions/{name}/exec']!.post.requestBody.content)).toEqual([
      'application/json',
    ]);
  });

  it('refuses NDJSON on the buffered exec route with 415', async () => {
    const call = open({ command: 'cat' }, '/v1/sessions/demo/exec');
    call.req.end();
    const a = await call.answer;
    expect(a.status).toBe(415);
    expect(a.raw).toContain('unsupported-media-type');
  });

  /** Sends a good line (echoed, so the stream is up), then `bad`: the stream must be cut. */
  async function expectCut(bad: string, opts: { marker: string; lines?: number }): Promise<void> {
    const call = open({ command: `bash -c 'cat; true' ${opts.marker}` });
    call.req.write(stdinLine('ok\n'));
    await call.stdoutSeen('ok\n');
    expect(await running(opts.marker)).toBe(true);
    if (bad) call.req.write(bad);
    for (let i = 0; i < (opts.lines ?? 0); i++) await write(call.req, stdinLine(randomBytes(STDIN_CAP)));
    // Ended as a good caller would: an uncut stream would now end with cat's exit event.
    if (!call.req.destroyed) call.req.end(line({ type: 'close' }));
    const a = await call.answer;
    call.req.destroy();
    // A stream that broke: no exit event (not even one with stdinError), a truncated body.
    expect(a.events.find((e) => e.type === 'exit')).toBeUndefined();
    expect(a.complete).toBe(false);
    await until(async () => !(await running(opts.marker)), 'the command to be stopped');
  }

  it('cuts the stream for a malformed later line and stops the command', async () => {
    await expectCut(line({ type: 'stdin' }), { marker: `bad-line-${randomUUID()}` });
  });

  it('cuts the stream for a later line that is not JSON', async () => {
    await expectCut('not json\n', { marker: `not-json-${randomUUID()}` });
  });

  it('cuts the stream for a stdin line over the line limit (1 MiB)', async () => {
    const big = line({ type: 'stdin', data: 'a'.repeat(1024 * 1024 + 1) });
    await expectCut(big, { marker: `long-line-${randomUUID()}` });
  });

  it('cuts the stream past GATEWAY_MAX_EXEC_STDIN_STREAM_BYTES of stdin', async () => {
    await expectCut('', { marker: `too-much-${randomUUID()}`, lines: 40 });
  });

  it('stops the command when the caller goes away mid-stdin, and the session still works', async () => {
    const marker = `gone-${randomUUID()}`;
    const call = open({ command: `bash -c 'cat; true' ${marker}` });
    call.req.write(stdinLine('ok\n'));
    await call.stdoutSeen('ok\n');
    expect(await running(marker)).toBe(true);
    call.req.destroy();
    await until(async () => !(await running(marker)), 'the command to be stopped');
    const next = open({ command: 'echo still-here' });
    next.req.end();
    const a = await next.answer;
    expect(a.stdout.toString('utf8')).toBe('still-here\n');
  });
});
