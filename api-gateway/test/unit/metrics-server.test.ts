/**
 * /metrics on its own port: the metrics server answers the app's registry (the instruments the
 * routes feed) and nothing else, with no API key; the API port answers 404 for /metrics.
 */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';

import { startMetricsServer, type MetricsServer } from '../../src/metrics-server.js';
import { KEYS, auth, buildTestApp, type TestApp } from '../helpers/app.js';
import { ready, session } from '../helpers/sessions.js';

describe('the metrics server', () => {
  let t: TestApp;
  let server: MetricsServer;
  const url = (path: string): string => `http://127.0.0.1:${server.port}${path}`;

  beforeEach(async () => {
    t = await buildTestApp();
    server = await startMetricsServer({
      port: 0,
      host: '127.0.0.1',
      registry: t.app.metrics.registry,
      logger: t.app.log,
    });
  });
  afterEach(async () => {
    await server.close();
    await t.app.close();
  });

  it('serves the request and exec metrics by route pattern on its port, never session names', async () => {
    t.store.put(session('secret-name', 'team-a', ready()));
    await t.app.inject({
      method: 'POST',
      url: '/v1/sessions/secret-name/exec',
      headers: auth(KEYS.a),
      payload: { command: 'true' },
    });
    const res = await fetch(url('/metrics'));
    const body = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(t.app.metrics.registry.contentType);
    expect(body).toContain(
      'sandbox_gateway_http_request_duration_seconds_count{method="POST",route="/v1/sessions/:name/exec",status="200"} 1',
    );
    expect(body).toContain('sandbox_gateway_exec_exit_total{transport="Agent",exit="zero"} 1');
    expect(body).not.toContain('secret-name');
    // The API port no longer serves them.
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
  });

  it('serves nothing but /metrics, and only to GET and HEAD', async () => {
    for (const path of ['/', '/healthz', '/readyz', '/openapi.json', '/v1/sessions']) {
      expect([path, (await fetch(url(path))).status]).toEqual([path, 404]);
    }
    expect((await fetch(url('/metrics'), { method: 'POST', body: 'x' })).status).toBe(405);
    expect((await fetch(url('/metrics'), { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(url('/metrics?x=1'))).status).toBe(200);
  });

  it('picks a free port for 0 and reports it', () => {
    expect(server.port).toBeGreaterThan(0);
  });
});
