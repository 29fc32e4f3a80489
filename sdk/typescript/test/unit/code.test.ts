/** The code interpreter and file watching in the TypeScript SDK, against a scripted fetch. */
import { describe, expect, it } from '@jest/globals';

import { GatewayError, ProtocolError, SandboxClient, UnavailableError } from '../../src/index.js';
import type { CodeEvent, CodeResult, WatchLine } from '../../src/index.js';
import { FakeFetch, enc, json, problem, type Step } from './fake-fetch.js';

function client(steps: Step[]): { fake: FakeFetch; c: SandboxClient } {
  const fake = new FakeFetch(steps);
  const c = new SandboxClient({
    baseUrl: 'http://gw.test:8080',
    apiKey: 'k-123',
    namespace: 'team-a',
    fetch: fake.fetch,
    retry: { initialDelayMs: 1 },
  });
  return { fake, c };
}

const RESULT: CodeResult = {
  status: 'ok',
  stdout: '',
  stderr: '',
  outputs: [{ type: 'result', data: { 'text/plain': '42' } }],
  executionCount: 2,
  durationMs: 3,
  contextReset: false,
  truncated: false,
  dropped: { stdout: 0, stderr: 0, displays: 0 },
};
const END = {
  type: 'end',
  status: 'ok',
  durationMs: 1,
  contextReset: false,
  truncated: false,
  dropped: RESULT.dropped,
};
const ndjson = (...lines: unknown[]): Step => ({
  status: 200,
  headers: { 'content-type': 'application/x-ndjson' },
  chunks: [enc(lines.map((l) => JSON.stringify(l) + '\n').join(''))],
});

describe('code interpreter', () => {
  it('runs code (POST, never retried) and returns the whole run', async () => {
    const { fake, c } = client([json(200, RESULT), problem(502, 'upstream-error'), json(200, RESULT)]);
    expect(await c.runCode('s 1', { code: 'x + 1', context: 'c1', timeoutSeconds: 5 })).toEqual(RESULT);
    expect(fake.calls[0]!.method).toBe('POST');
    expect(fake.calls[0]!.url.pathname + fake.calls[0]!.url.search).toBe(
      '/v1/sessions/s%201/code?namespace=team-a',
    );
    expect(JSON.parse(fake.calls[0]!.body!)).toEqual({ code: 'x + 1', context: 'c1', timeoutSeconds: 5 });
    await expect(c.runCode('s', { code: '1' })).rejects.toBeInstanceOf(GatewayError);
    expect(fake.calls).toHaveLength(2);
  });

  it('streams the events of a run, the end last', async () => {
    const { fake, c } = client([
      ndjson({ type: 'stdout', text: 'hi\n' }, { type: 'display', data: { 'image/png': 'iVBO' } }, END),
    ]);
    const events: CodeEvent[] = [];
    for await (const ev of c.runCodeStream('s', { code: 'print("hi")' })) events.push(ev);
    expect(events.map((e) => e.type)).toEqual(['stdout', 'display', 'end']);
    expect(fake.calls[0]!.url.pathname).toBe('/v1/sessions/s/code/stream');
  });

  it('refuses a stream without its end event', async () => {
    const { c } = client([ndjson({ type: 'stdout', text: 'x' })]);
    const read = async (): Promise<void> => {
      for await (const _ev of c.runCodeStream('s', { code: '1' })) void _ev;
    };
    await expect(read()).rejects.toBeInstanceOf(ProtocolError);
  });

  it('manages contexts: list, create, interrupt, restart, delete', async () => {
    const ctx = {
      name: 'c1',
      language: 'python',
      state: 'idle',
      executionCount: 0,
      createdAt: '2030-01-01T00:00:00.000Z',
    };
    const { fake, c } = client([
      json(200, { contexts: [ctx] }),
      json(201, ctx),
      json(200, ctx),
      json(200, ctx),
      { status: 204 },
    ]);
    expect(await c.listCodeContexts('s')).toEqual([ctx]);
    await c.createCodeContext('s', { name: 'c1' });
    await c.interruptCodeContext('s', 'c1');
    await c.restartCodeContext('s', 'c1');
    await c.deleteCodeContext('s', 'c1');
    expect(fake.calls.map((x) => `${x.method} ${x.url.pathname}`)).toEqual([
      'GET /v1/sessions/s/code/contexts',
      'POST /v1/sessions/s/code/contexts',
      'POST /v1/sessions/s/code/contexts/c1/interrupt',
      'POST /v1/sessions/s/code/contexts/c1/restart',
      'DELETE /v1/sessions/s/code/contexts/c1',
    ]);
  });

  it('maps 503 code-unavailable (an image without a kernel)', async () => {
    const { c } = client([
      problem(503, 'code-unavailable'),
      problem(503, 'code-unavailable'),
      problem(503, 'code-unavailable'),
    ]);
    const err = await c.runCode('s', { code: '1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect((err as GatewayError).code).toBe('code-unavailable');
  });
});

describe('watch', () => {
  it('yields the lines with the query, and stops after the end line', async () => {
    const { fake, c } = client([
      ndjson(
        { type: 'watching', path: 'src', recursive: true },
        { type: 'rename', path: 'src/b', from: 'src/a', directory: false },
        { type: 'end', reason: 'timeout' },
      ),
    ]);
    const lines: WatchLine[] = [];
    for await (const line of c.watch('s', { path: 'src', recursive: true, timeoutSeconds: 10 }))
      lines.push(line);
    expect(lines.map((l) => l.type)).toEqual(['watching', 'rename', 'end']);
    expect(fake.calls[0]!.url.search).toBe('?path=src&recursive=true&timeoutSeconds=10&namespace=team-a');
  });
});
