/** Two gateway replicas (separate informers) racing creates of one name on a real API server. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { SandboxClient } from '@sandbox-platform/client';
import { GatewayEnv, KEYS } from '@sandbox-platform/test-support/gateway';

describe('several gateway replicas', () => {
  const env = new GatewayEnv();
  let clients: SandboxClient[];
  beforeAll(async () => {
    await env.setup();
    const gateways = [await env.startGateway(), await env.startGateway()];
    clients = gateways.map(
      (g) => new SandboxClient({ baseUrl: g.url, apiKey: KEYS.a, retry: { retries: 0 } }),
    );
  });
  afterAll(async () => {
    await env.teardown();
  });

  it('20 concurrent creates of one name across two replicas give one CR, one 201 and no error', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        clients[i % 2]!.createSession({ name: 'raced', idleTimeoutSeconds: 600 }),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.session.uid)).size).toBe(1);
    const crs = (await env.list(env.nsA.name)).filter((s) => s.metadata.name === 'raced');
    expect(crs).toHaveLength(1);
    expect(crs[0]!.metadata.uid).toBe(results[0]!.session.uid);
  });

  it('a session created through one replica is read at once through the other (read-your-writes)', async () => {
    for (let i = 0; i < 10; i++) {
      const name = `ryw-${i}`;
      const { created } = await clients[0]!.createSession({ name });
      expect(created).toBe(true);
      // No wait: the other replica's watch may not have delivered it yet.
      expect((await clients[1]!.getSession(name)).name).toBe(name);
    }
  });

  it('a session created through one replica is served by the other', async () => {
    await clients[0]!.createSession({ name: 'cross' });
    await env.makeReady(env.nsA.name, 'cross');
    expect((await clients[1]!.exec('cross', { command: 'echo other-replica' })).stdout).toBe(
      'other-replica\n',
    );
  });
});
