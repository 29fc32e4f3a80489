/** Warm pools in the TypeScript SDK: createSession sends `pool`, and a session reports it. */
import { describe, expect, it } from '@jest/globals';

import { SandboxClient, type Session } from '../../src/index.js';
import { FakeFetch, json } from './fake-fetch.js';

const SESSION: Session = {
  name: 's1',
  namespace: 'team-a',
  uid: 'u1',
  ready: true,
  reason: 'SandboxReady',
  message: '',
  execTransport: 'Agent',
  pool: 'warm',
};

describe('createSession with a pool', () => {
  it('sends pool in the body and returns the session with it', async () => {
    const fake = new FakeFetch([json(201, SESSION)]);
    const c = new SandboxClient({ baseUrl: 'http://gw.test', apiKey: 'k', fetch: fake.fetch });
    const { session, created } = await c.createSession({ name: 's1', pool: 'warm' });
    expect(JSON.parse(fake.calls[0]?.body ?? '')).toEqual({ name: 's1', pool: 'warm' });
    expect([session.pool, created]).toEqual(['warm', true]);
  });
});
