import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';

import { PROBLEMS } from '../../../src/errors.js';
import { buildTestApp, type TestApp } from '../../helpers/app.js';

describe('operational routes', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await buildTestApp();
  });
  afterEach(async () => {
    await t.app.close();
  });

  it('/healthz answers without a key', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect([res.statusCode, res.json()]).toEqual([200, { status: 'ok' }]);
  });

  it('/readyz follows the session cache sync state', async () => {
    t.store.isSynced = false;
    const before = await t.app.inject({ method: 'GET', url: '/readyz' });
    t.store.isSynced = true;
    const after = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect([before.statusCode, after.statusCode]).toEqual([503, 200]);
  });

  it('/readyz fails while the replica drains, and every response asks the client to reconnect', async () => {
    t.store.isSynced = true;
    const drained = t.app.drain(20);
    expect(t.app.draining()).toBe(true);
    const readyz = await t.app.inject({ method: 'GET', url: '/readyz' });
    // Still serving: a request that reached this replica during the drain is answered normally.
    const healthz = await t.app.inject({ method: 'GET', url: '/healthz' });
    await drained;
    expect([readyz.statusCode, readyz.json(), healthz.statusCode, healthz.headers.connection]).toEqual([
      503,
      { status: 'shutting down' },
      200,
      'close',
    ]);
  });

  it('/metrics is not on the API port (404): it has a port of its own (metrics-server.ts)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({
      type: expect.stringMatching(/\/not-found$/),
      detail: expect.stringContaining('9090'),
    });
    expect(res.body).not.toContain('sandbox_gateway_');
  });

  it('/openapi.json documents every API route from the route schemas, with the problem types', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    const doc = res.json<{
      openapi: string;
      paths: Record<string, Record<string, { requestBody?: unknown; parameters: Array<{ name: string }> }>>;
      info: { 'x-problem-types': unknown[] };
    }>();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/v1/sessions',
      '/v1/sessions/{name}',
      '/v1/sessions/{name}/audit',
      '/v1/sessions/{name}/audit/verify',
      '/v1/sessions/{name}/code',
      '/v1/sessions/{name}/code/contexts',
      '/v1/sessions/{name}/code/contexts/{context}',
      '/v1/sessions/{name}/code/contexts/{context}/interrupt',
      '/v1/sessions/{name}/code/contexts/{context}/restart',
      '/v1/sessions/{name}/code/stream',
      '/v1/sessions/{name}/egress',
      '/v1/sessions/{name}/exec',
      '/v1/sessions/{name}/exec/stream',
      '/v1/sessions/{name}/files/{path}',
      '/v1/sessions/{name}/fork',
      '/v1/sessions/{name}/ports/{port}',
      '/v1/sessions/{name}/ports/{port}/{path}',
      '/v1/sessions/{name}/previews',
      '/v1/sessions/{name}/processes',
      '/v1/sessions/{name}/processes/{id}',
      '/v1/sessions/{name}/processes/{id}/output',
      '/v1/sessions/{name}/processes/{id}/output/stream',
      '/v1/sessions/{name}/processes/{id}/signal',
      '/v1/sessions/{name}/processes/{id}/wait',
      '/v1/sessions/{name}/pty',
      '/v1/sessions/{name}/resume',
      '/v1/sessions/{name}/suspend',
      '/v1/sessions/{name}/watch',
      '/v1/snapshots',
      '/v1/snapshots/{name}',
    ]);
    expect(Object.keys(doc.paths['/v1/sessions']!).sort()).toEqual(['get', 'post']);
    expect(doc.paths['/v1/sessions/{name}/exec']!.post!.requestBody).toMatchObject({
      content: { 'application/json': { schema: { required: ['command'], additionalProperties: false } } },
    });
    expect(doc.paths['/v1/sessions/{name}/files/{path}']!.put!.parameters.map((p) => p.name)).toEqual([
      'name',
      'path',
      'namespace',
    ]);
    expect(doc.info['x-problem-types']).toHaveLength(Object.keys(PROBLEMS).length);
  });
});
