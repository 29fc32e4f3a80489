/**
 * Helpers of the streamed-stdin specs (interactive-stdin, interactive-stdin-limits): one NDJSON
 * `POST {path}/exec/stream` driven line by line over node:http (the answer read as it arrives),
 * writes with backpressure, and the sandbox's processes that carry a marker in their arguments.
 */
import http from 'node:http';

import { expect } from '@jest/globals';

import { BASE, KEY, api } from './interactive-support.js';

/** How long a wait for an answer may take before the test says what it was waiting for. */
export const WAIT_MS = 60_000;

export interface StreamEvent {
  type: string;
  data?: string;
  encoding?: 'utf-8' | 'base64';
  exitCode?: number;
  stdinError?: string;
  truncated?: boolean;
}

/** What came back: status, media type, the events, stdout decoded, whether the body ended whole. */
export interface Answer {
  status: number;
  contentType: string;
  events: StreamEvent[];
  stdout: Buffer;
  complete: boolean;
  raw: string;
}

/** One streamed exec: stdin lines are written to `req`; the answer is read as it arrives. */
export interface StreamedExec {
  req: http.ClientRequest;
  answer: Promise<Answer>;
  /** Resolves once the stdout read so far contains `text` (fails after WAIT_MS, saying so). */
  stdoutSeen(text: string): Promise<void>;
}

export const line = (value: unknown): string => JSON.stringify(value) + '\n';
export const stdinLine = (data: Buffer | string): string =>
  typeof data === 'string'
    ? line({ type: 'stdin', data })
    : line({ type: 'stdin', data: data.toString('base64'), encoding: 'base64' });

function parseEvents(text: string): StreamEvent[] {
  const events: StreamEvent[] = [];
  for (const l of text.split('\n')) {
    if (l.length === 0) continue;
    try {
      events.push(JSON.parse(l) as StreamEvent);
    } catch {
      // a cut stream may end in a partial line
    }
  }
  return events;
}

const stdoutOf = (text: string): Buffer =>
  Buffer.concat(
    parseEvents(text)
      .filter((e) => e.type === 'stdout')
      .map((e) => Buffer.from(e.data ?? '', e.encoding === 'base64' ? 'base64' : 'utf8')),
  );

/** Opens `POST {path}/exec/stream` with an NDJSON body and writes its request line. */
export function openStream(path: string, request: unknown): StreamedExec {
  const req = http.request(new URL(`${path}/exec/stream`, BASE), {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/x-ndjson' },
  });
  req.on('error', () => undefined); // a cut connection is read from the answer
  let text = '';
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  const answer = new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  }).then(
    (res) =>
      new Promise<Answer>((resolve) => {
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
          const out = stdoutOf(text).toString('utf8');
          for (const w of waiters.splice(0)) {
            if (out.includes(w.text)) w.resolve();
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
    answer,
    stdoutSeen: (t) =>
      new Promise<void>((resolve, reject) => {
        if (stdoutOf(text).toString('utf8').includes(t)) return resolve();
        const timer = setTimeout(
          () => reject(new Error(`no ${JSON.stringify(t)} on stdout within ${WAIT_MS} ms; got: ${text}`)),
          WAIT_MS,
        );
        waiters.push({
          text: t,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      }),
  };
}

/** Writes with backpressure (awaits 'drain' when the socket buffer is full, or the close). */
export async function write(req: http.ClientRequest, text: string | Uint8Array): Promise<void> {
  if (req.destroyed || req.writableEnded || req.write(text)) return;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      req.off('drain', done);
      req.off('close', done);
      resolve();
    };
    req.once('drain', done);
    req.once('close', done);
  });
}

/**
 * The processes of the session at `path` whose arguments contain `marker`, from /proc. Run as a
 * background process (the processes API): an exec would queue behind a streamed command in the
 * agent's one shell. Its own grep does not match: its pattern is `[m]arker`, which the regex reads
 * as `marker`.
 */
export async function processesWith(path: string, marker: string): Promise<string> {
  // Open finding (2026-12-06): right after a streamed command was cut, this lister itself now and
  // then exits 137 (SIGKILL; 2 of about 8 runs on a freshly started cluster). Such a run says
  // nothing about the marker: it is logged and the lister runs again, at most three times.
  for (let attempt = 1; ; attempt++) {
    const started = await api('POST', `${path}/processes`, {
      command: `grep -las -- '[${marker[0]}]${marker.slice(1)}' /proc/[0-9]*/cmdline; true`,
    });
    expect({ status: started.status, body: started.body }).toMatchObject({ status: 201 });
    const id = String(started.body.id);
    const waited = await api('GET', `${path}/processes/${id}/wait?timeoutSeconds=30`);
    if (waited.body.exitCode === 137 && attempt < 3) {
      console.log(`the process lister was SIGKILLed (attempt ${attempt}): ${JSON.stringify(waited.body)}`);
      await api('DELETE', `${path}/processes/${id}`);
      continue;
    }
    expect(waited.body).toMatchObject({ state: 'exited', exitCode: 0 });
    const out = await api('GET', `${path}/processes/${id}/output`);
    await api('DELETE', `${path}/processes/${id}`);
    return String((out.body.stdout as { data: string }).data);
  }
}
