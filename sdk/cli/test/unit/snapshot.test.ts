/** sbx fork and sbx snapshot against a local stand-in of the gateway's routes (real HTTP, in process). */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { sbx } from './helpers.js';

const SNAP = {
  name: 'work-abcde',
  namespace: 'team-a',
  session: 'work',
  ready: true,
  phase: 'Ready',
  reason: 'SnapshotReady',
  message: '',
  digest: `sha256:${'a'.repeat(64)}`,
  files: 3,
  sizeBytes: 4096,
};
const session = (name: string) => ({
  name,
  namespace: 'team-a',
  uid: `u-${name}`,
  ready: false,
  reason: 'WorkspaceRestoring',
  message: '',
  execTransport: 'Agent',
  fromSnapshot: SNAP.name,
});

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
      const path = (req.url ?? '').split('?')[0];
      let answer: unknown = SNAP;
      let status = 200;
      if (path === '/v1/sessions/work/fork') {
        const names = (JSON.parse(text) as { names?: string[] }).names ?? ['work-fork-1', 'work-fork-2'];
        answer = { snapshot: SNAP, sessions: names.map(session) };
        status = 201;
      } else if (path === '/v1/snapshots' && req.method === 'GET') answer = { items: [SNAP] };
      else if (path === '/v1/snapshots') status = 202;
      else if (req.method === 'DELETE') status = 204;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 204 ? undefined : JSON.stringify(answer));
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

describe('fork and snapshot', () => {
  it('fork NAME -c 2 posts count and lists the new sessions', async () => {
    seen.length = 0;
    const r = await sbx(['fork', 'work', '-c', '2'], env());
    expect(r.code).toBe(0);
    expect(seen.map((s) => `${s.method} ${s.url} ${s.body}`)).toEqual([
      'POST /v1/sessions/work/fork?namespace=team-a {"count":2}',
    ]);
    expect(r.stderr).toContain('snapshot "work-abcde" of "work"; 2 sessions');
    expect(r.stdout).toMatch(/work-fork-1\s+False\s+WorkspaceRestoring/);
  });

  it('fork --name sends the names (count from them) and -o json prints snapshot and sessions', async () => {
    seen.length = 0;
    const r = await sbx(['fork', 'work', '--name', 'a1', '--name', 'a2', '-o', 'json'], env());
    expect(JSON.parse(seen[0]!.body)).toEqual({ count: 2, names: ['a1', 'a2'] });
    expect(JSON.parse(r.stdout)).toMatchObject({
      snapshot: { name: 'work-abcde' },
      sessions: [{ name: 'a1' }, { name: 'a2' }],
    });
  });

  it('refuses a count out of 1..10', async () => {
    const r = await sbx(['fork', 'work', '-c', '11'], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--count must be 1..10');
  });

  it('snapshot create / list / delete', async () => {
    seen.length = 0;
    const created = await sbx(['snapshot', 'create', 'work', '--name', 'work-abcde'], env());
    expect(created.code).toBe(0);
    expect(JSON.parse(seen[0]!.body)).toEqual({ session: 'work', name: 'work-abcde' });
    const list = await sbx(['snapshot', 'list'], env());
    expect(list.stdout).toMatch(/^NAME\s+SESSION\s+READY\s+REASON\s+FILES\s+BYTES\s+AGE/);
    expect(list.stdout).toMatch(/work-abcde\s+work\s+True\s+SnapshotReady\s+3\s+4096/);
    const del = await sbx(['snapshot', 'delete', 'work-abcde'], env());
    expect(del.stdout).toBe('snapshot "work-abcde" deleted\n');
    expect(seen.at(-1)).toMatchObject({ method: 'DELETE', url: '/v1/snapshots/work-abcde?namespace=team-a' });
  });
});
