/** `sbx create --pool P` against a local stand-in of the gateway's create route (real HTTP, in process). */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { sbx } from './helpers.js';

let server: Server;
let url: string;
const bodies: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      bodies.push(text);
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          name: 'work',
          namespace: 'team-a',
          uid: 'u1',
          ready: true,
          reason: 'SandboxReady',
          message: '',
          execTransport: 'Agent',
          pool: 'warm',
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('create --pool', () => {
  it('sends the pool name', async () => {
    const r = await sbx(['create', 'work', '--pool', 'warm', '-o', 'json'], {
      SANDBOX_URL: url,
      SANDBOX_KEY: 'k',
      SANDBOX_NAMESPACE: 'team-a',
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(bodies[0] ?? '')).toEqual({ name: 'work', pool: 'warm' });
    expect(JSON.parse(r.stdout)).toMatchObject({ pool: 'warm' });
  });
});
