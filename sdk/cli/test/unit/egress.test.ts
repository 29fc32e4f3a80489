/** sbx egress and sbx audit against a local stand-in of the gateway's routes (real HTTP, in process). */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { sbx } from './helpers.js';

let server: Server;
let url: string;
let broken = false;
const seen: Array<{ method: string; url: string; body: string }> = [];

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return text;
}

const RECORD = {
  seq: 1,
  time: '2030-01-01T00:00:00.000Z',
  namespace: 'team-a',
  session: 'work',
  kind: 'egress',
  actor: 'sandbox',
  outcome: 'denied',
  detail: { host: 'evil.example', reason: 'no-rule', path: null },
  prev: '0'.repeat(64),
  hash: 'a'.repeat(64),
};

beforeAll(async () => {
  server = createServer((req, res) => {
    void body(req).then((text) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', body: text });
      const path = (req.url ?? '').split('?')[0];
      let answer: unknown;
      if (path === '/v1/sessions/work/egress') {
        answer = { name: 'work', namespace: 'team-a', egress: text ? JSON.parse(text) : { rules: [] } };
      } else if (path === '/v1/sessions/work/audit') answer = { records: [RECORD], lastSeq: 1, nextSeq: 1 };
      else
        answer = broken
          ? { valid: false, records: 3, firstSeq: 1, lastSeq: 3, brokenAt: 2, reason: 'hash-mismatch' }
          : { valid: true, records: 3, firstSeq: 1, lastSeq: 3 };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
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

describe('egress and audit', () => {
  it('egress set puts the rules from --allow and prints them', async () => {
    seen.length = 0;
    const r = await sbx(
      ['egress', 'set', 'work', '--allow', 'pypi.org', '--allow', '*.pythonhosted.org:443', '--no-defaults'],
      env(),
    );
    expect(r.code).toBe(0);
    expect(seen[0]!.method).toBe('PUT');
    expect(JSON.parse(seen[0]!.body)).toEqual({
      rules: [{ host: 'pypi.org' }, { host: '*.pythonhosted.org', ports: [443] }],
      inheritNamespaceDefaults: false,
    });
    expect(r.stdout).toBe('pypi.org\t80,443\n*.pythonhosted.org\t443\nnamespace defaults: no\n');
  });

  it('egress set refuses a malformed host before calling', async () => {
    seen.length = 0;
    const r = await sbx(['egress', 'set', 'work', '--allow', 'Not_A_Host'], env());
    expect(r.code).not.toBe(0);
    expect(seen).toEqual([]);
  });

  it('audit lists records; audit verify exits 1 on a broken chain', async () => {
    const list = await sbx(['audit', 'work', '--after', '0'], env());
    expect(list.stdout).toContain(
      '1\t2030-01-01T00:00:00.000Z\tegress\tdenied\tsandbox\thost=evil.example reason=no-rule',
    );
    broken = false;
    expect((await sbx(['audit', 'verify', 'work'], env())).code).toBe(0);
    broken = true;
    const bad = await sbx(['audit', 'verify', 'work'], env());
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('BROKEN at seq 2: hash-mismatch (3 records)\n');
  });
});
