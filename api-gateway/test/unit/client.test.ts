import { request } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { GatewayClient, GatewayError } from '../../src/client/index.js';
import { KEYS, buildTestApp, type TestApp } from '../helpers/app.js';
import { result } from '../helpers/fake-transport.js';
import { pending, ready, session } from '../helpers/sessions.js';

describe('GatewayClient (against a listening gateway with fakes)', () => {
  let t: TestApp;
  let client: GatewayClient;
  let url: string;
  beforeAll(async () => {
    t = await buildTestApp();
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
    client = new GatewayClient({ baseUrl: url + '/', apiKey: KEYS.both, namespace: 'team-a' });
  });
  afterAll(async () => {
    await t.app.close();
  });

  it('creates (201 then 200), gets, lists and deletes sessions', async () => {
    const first = await client.createSession({ name: 'c1', idleTimeoutSeconds: 600 });
    const again = await client.createSession({ name: 'c1', idleTimeoutSeconds: 600 });
    expect([first.created, again.created]).toEqual([true, false]);
    expect((await client.getSession('c1')).namespace).toBe('team-a');
    expect((await client.listSessions()).map((s) => s.name)).toContain('c1');
    await client.deleteSession('c1');
    await expect(client.getSession('c1')).rejects.toMatchObject({ status: 410, slug: 'session-gone' });
  });

  it('execs, streams, and moves files', async () => {
    t.store.put(session('c2', 'team-a', ready()));
    t.agent.nextResult = result({ stdout: 'x', exitCode: 4 });
    expect(await client.exec('c2', { command: 'x' })).toMatchObject({ stdout: 'x', exitCode: 4 });
    const events = [];
    for await (const ev of client.execStream('c2', { command: 'echo hi' })) events.push(ev);
    expect(events.map((e) => e.type)).toEqual(['stdout', 'exit']);
    await client.writeFile('c2', 'dir/f.txt', 'content');
    expect(new TextDecoder().decode(await client.readFile('c2', 'dir/f.txt'))).toBe('content');
  });

  it('accepts a raw upload with no content type header (as curl -T sends it)', async () => {
    t.store.put(session('c4', 'team-a', ready()));
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const u = new URL(`${url}/v1/sessions/c4/files/raw.txt?namespace=team-a`);
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname + u.search,
          method: 'PUT',
          headers: { authorization: `Bearer ${KEYS.a}`, 'content-length': 3 },
        },
        (r) => {
          let body = '';
          r.on('data', (c: Buffer) => (body += c.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end('abc');
    });
    expect(res).toEqual({ status: 201, body: JSON.stringify({ path: 'raw.txt', size: 3 }) });
  });

  it('throws GatewayError with the problem slug and Retry-After', async () => {
    t.store.put(session('c3', 'team-a', pending()));
    const err = await client.exec('c3', { command: 'true', waitSeconds: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 503, slug: 'session-not-ready', retryAfterSeconds: 2 });
    await expect(client.listSessions('kube-system')).rejects.toMatchObject({
      status: 403,
      slug: 'forbidden',
    });
  });
});
