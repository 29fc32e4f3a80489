/** suspend and resume against a local stand-in of the gateway's two routes (real HTTP, in process). */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { sbx } from './helpers.js';

const SESSION = {
  name: 'work',
  namespace: 'team-a',
  uid: 'u1',
  ready: false,
  reason: 'Suspended',
  message: '',
  execTransport: 'Agent',
  suspended: true,
  persistentWorkspace: true,
};

let server: Server;
let url: string;
const seen: Array<{ method: string; url: string; body: string }> = [];

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return text;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void body(req).then((text) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', body: text });
      const resumed = req.url?.includes('/resume');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          resumed ? { ...SESSION, ready: true, reason: 'SandboxReady', suspended: false } : SESSION,
        ),
      );
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

describe('suspend and resume', () => {
  it('suspend NAME... posts each and says so', async () => {
    seen.length = 0;
    const r = await sbx(['suspend', 'work', 'other'], env());
    expect(r).toMatchObject({ code: 0, stdout: 'session "work" suspended\nsession "other" suspended\n' });
    expect(seen.map((s) => `${s.method} ${s.url} ${s.body}`)).toEqual([
      'POST /v1/sessions/work/suspend?namespace=team-a {}',
      'POST /v1/sessions/other/suspend?namespace=team-a {}',
    ]);
  });

  it('resume --wait sends waitSeconds; -o json prints the session', async () => {
    seen.length = 0;
    const r = await sbx(['resume', 'work', '--wait', '1m', '-o', 'json'], env());
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'work', ready: true, suspended: false });
    expect(seen[0]).toMatchObject({
      url: '/v1/sessions/work/resume?namespace=team-a',
      body: '{"waitSeconds":60}',
    });
    expect((await sbx(['resume', 'work'], env())).stdout).toBe('session "work" resumed and ready\n');
  });

  it('needs a NAME; refuses a malformed --wait', async () => {
    expect((await sbx(['suspend'], env())).stderr).toContain('suspend needs at least one session NAME');
    expect((await sbx(['resume', 'work', '--wait', 'soon'], env())).code).toBe(2);
  });

  it('create --persistent-workspace --shutdown-policy Suspend sends both', async () => {
    seen.length = 0;
    await sbx(['create', 'work', '--persistent-workspace', '--shutdown-policy', 'Suspend'], env());
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({
      name: 'work',
      persistentWorkspace: true,
      shutdownPolicy: 'Suspend',
    });
  });
});
