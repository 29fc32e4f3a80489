/**
 * File watching through the gateway (ADR 0031), against a real agent and its inotify helper
 * (compiled with gcc): NDJSON, SSE and WebSocket carry the same lines in order; a path outside the
 * workspace is refused before anything streams; a watch ends with its reason (timeout, the
 * session deleted or suspended).
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import WebSocket from 'ws';

import { KEYS } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';

jest.setTimeout(60_000);

const SOURCE = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../../../test-e2e/images/src/sandbox-watch.c',
);
type Line = { type: string; path?: string; from?: string; reason?: string };

/** Reads a streamed answer's lines until `done` holds or the answer ends. */
async function readLines(
  res: Response,
  parse: (chunk: string) => Line[],
  done: (l: Line[]) => boolean,
): Promise<Line[]> {
  const lines: Line[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!done(lines)) {
    const { value, done: over } = await reader.read();
    if (over) break;
    text += decoder.decode(value, { stream: true });
    const cut = text.lastIndexOf(parse === ndjson ? '\n' : '\n\n');
    if (cut < 0) continue;
    lines.push(...parse(text.slice(0, cut)));
    text = text.slice(cut + (parse === ndjson ? 1 : 2));
  }
  await reader.cancel();
  return lines;
}
const ndjson = (t: string): Line[] =>
  t
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);
const sse = (t: string): Line[] =>
  t
    .split('\n\n')
    .filter(Boolean)
    .map(
      (block) =>
        JSON.parse(
          block
            .split('\n')
            .find((l) => l.startsWith('data: '))!
            .slice(6),
        ) as Line,
    );

describe('file watching through the gateway (real agent and helper)', () => {
  let g: AgentApp;
  let helperPath: string;
  beforeAll(async () => {
    helperPath = join(tmpdir(), `gw-sandbox-watch-${process.pid}`);
    await promisify(execFile)('gcc', ['-O1', '-Wall', '-Wextra', '-Werror', '-o', helperPath, SOURCE]);
    g = await startAgentApp({ watch: { helperPath } });
  });
  afterAll(async () => {
    await g.close();
    await rm(helperPath, { force: true });
  });

  const open = (query: string, headers: Record<string, string> = {}, key = KEYS.a): Promise<Response> =>
    fetch(`${g.url}/v1/sessions/demo/watch?${query}`, {
      headers: { authorization: `Bearer ${key}`, ...headers },
    });

  it('NDJSON: create, modify, rename and delete arrive in order; the watch ends at its timeout', async () => {
    await mkdir(join(g.workspace, 'n'));
    const res = await open('path=n&timeoutSeconds=3');
    expect(res.headers.get('content-type')).toContain('application/x-ndjson');
    const reading = readLines(res, ndjson, (l) => l.some((x) => x.type === 'end'));
    await new Promise((r) => setTimeout(r, 300));
    await writeFile(join(g.workspace, 'n/a'), 'x');
    await rename(join(g.workspace, 'n/a'), join(g.workspace, 'n/b'));
    await rm(join(g.workspace, 'n/b'));
    const lines = await reading;
    expect(lines.map((l) => [l.type, l.path, l.from])).toEqual([
      ['watching', 'n', undefined],
      ['create', 'n/a', undefined],
      ['modify', 'n/a', undefined],
      ['rename', 'n/b', 'n/a'],
      ['delete', 'n/b', undefined],
      ['end', undefined, undefined],
    ]);
    expect(lines[lines.length - 1]).toEqual({ type: 'end', reason: 'timeout' });
  });

  it('SSE with Accept: text/event-stream', async () => {
    await mkdir(join(g.workspace, 's'));
    const res = await open('path=s&timeoutSeconds=2', { accept: 'text/event-stream' });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reading = readLines(res, sse, (l) => l.some((x) => x.type === 'end'));
    await new Promise((r) => setTimeout(r, 300));
    await mkdir(join(g.workspace, 's/d'));
    const lines = await reading;
    expect(lines.map((l) => l.type)).toEqual(['watching', 'create', 'end']);
  });

  it('WebSocket: one text message per line, then close 1000', async () => {
    await mkdir(join(g.workspace, 'ws'));
    const ws = new WebSocket(
      `${g.url.replace('http', 'ws')}/v1/sessions/demo/watch?path=ws&timeoutSeconds=2`,
      {
        headers: { authorization: `Bearer ${KEYS.a}` },
      },
    );
    const messages: Line[] = [];
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('message', (m: Buffer) => messages.push(JSON.parse(m.toString('utf8')) as Line));
    await new Promise((resolve) => ws.once('open', resolve));
    await new Promise((r) => setTimeout(r, 300));
    await writeFile(join(g.workspace, 'ws/f'), '');
    expect(await closed).toBe(1000);
    expect(messages.map((m) => [m.type, m.path])).toEqual([
      ['watching', 'ws'],
      ['create', 'ws/f'],
      ['end', undefined],
    ]);
  });

  it('SECURITY: watching outside the workspace is refused before anything streams', async () => {
    for (const path of ['..', '/etc', '../../etc']) {
      const res = await open(`path=${encodeURIComponent(path)}`);
      expect({ path, status: res.status, type: ((await res.json()) as { type: string }).type }).toEqual({
        path,
        status: 403,
        type: 'https://sandbox.dev/problems/path-forbidden',
      });
    }
    expect((await open('path=', {}, KEYS.b)).status).toBe(404);
  });

  it('ends with session-deleted when the session goes, before its agent does', async () => {
    const res = await open('path=&timeoutSeconds=30');
    const reading = readLines(res, ndjson, (l) => l.some((x) => x.type === 'end'));
    await new Promise((r) => setTimeout(r, 300));
    const saved = g.store.get('team-a', 'demo')!;
    g.store.remove('team-a', 'demo');
    const lines = await reading;
    g.store.put(saved);
    expect(lines[lines.length - 1]).toEqual({ type: 'end', reason: 'session-deleted' });
  });
});
