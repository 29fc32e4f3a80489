/** `sbx run` and `sbx watch` against a scripted gateway on a local port. */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { sbx } from './helpers.js';

let server: Server;
let url: string;
const seen: Array<{ method: string; url: string; body: string }> = [];
/** The NDJSON lines the next call answers with. */
let answer: unknown[] = [];

const PNG = Buffer.from('89504e470d0a1a0a0000', 'hex').toString('base64');
const end = (status: string, extra: object = {}): object => ({
  type: 'end',
  status,
  durationMs: 5,
  contextReset: false,
  truncated: false,
  dropped: { stdout: 0, stderr: 0, displays: 0 },
  ...extra,
});

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return text;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void body(req).then((text) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', body: text });
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(answer.map((l) => JSON.stringify(l) + '\n').join(''));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const env = (): Record<string, string> => ({
  SANDBOX_URL: url,
  SANDBOX_KEY: 'k',
  SANDBOX_NAMESPACE: 'team-a',
});

describe('run', () => {
  it('sends the code after --, prints output and the result, saves images with --out-dir', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sbx-run-'));
    seen.length = 0;
    answer = [
      { type: 'stdout', text: 'hi\n' },
      { type: 'display', data: { 'image/png': PNG, 'text/plain': '<Figure>' } },
      { type: 'result', data: { 'text/plain': '42' }, executionCount: 1 },
      end('ok'),
    ];
    const r = await sbx(
      ['run', 'box', '--context', 'c1', '--timeout', '10s', '--out-dir', dir, '--', 'x', '+', '1'],
      env(),
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('hi\n42\n');
    expect(r.stderr).toContain(`saved image/png to ${join(dir, 'output-1.png')}`);
    expect((await readFile(join(dir, 'output-1.png'))).subarray(1, 4).toString()).toBe('PNG');
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/sessions/box/code/stream?namespace=team-a' });
    expect(JSON.parse(seen[0]!.body)).toEqual({ code: 'x + 1', context: 'c1', timeoutSeconds: 10 });
    await rm(dir, { recursive: true });
  });

  it('reads the code from stdin with -, prints a traceback and exits 1 on an error, 124 on a timeout', async () => {
    answer = [
      { type: 'error', name: 'ValueError', value: 'bad', traceback: ['Traceback...', 'ValueError: bad'] },
      end('error'),
    ];
    const failed = await sbx(['run', 'box', '-'], env(), 'raise ValueError("bad")');
    expect(failed).toMatchObject({ code: 1, stderr: 'Traceback...\nValueError: bad\n' });
    expect(JSON.parse(seen[seen.length - 1]!.body)).toEqual({ code: 'raise ValueError("bad")' });
    answer = [end('timeout')];
    expect((await sbx(['run', 'box', '--', 'while True: pass'], env())).code).toBe(124);
  });

  it('needs the code in exactly one way', async () => {
    const r = await sbx(['run', 'box'], env());
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('run needs the code in exactly one way');
  });
});

describe('watch', () => {
  it('prints one JSON line per change with the path, -r and --timeout in the query', async () => {
    seen.length = 0;
    answer = [
      { type: 'watching', path: 'src', recursive: true },
      { type: 'create', path: 'src/a', directory: false },
      { type: 'end', reason: 'timeout' },
    ];
    const r = await sbx(['watch', 'box', 'src', '-r', '--timeout', '5s'], env());
    expect(r.code).toBe(0);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { type: string }).type),
    ).toEqual(['watching', 'create', 'end']);
    expect(seen[0]!.url).toBe(
      '/v1/sessions/box/watch?path=src&recursive=true&timeoutSeconds=5&namespace=team-a',
    );
  });
});
