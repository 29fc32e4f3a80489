/** The probe and metrics endpoints, one server per port: each serves only its own routes. */
import { afterEach, describe, expect, it } from '@jest/globals';
import * as prom from 'prom-client';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { startHttpServer, stopHttpServer } from '../../../src/telemetry/http-server.js';
import { MemoryLogger } from '../../fakes/fakes.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => stopHttpServer(s)));
});

async function get(server: Server, path: string): Promise<{ status: number; body: string }> {
  const { port } = server.address() as AddressInfo;
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
}

describe('startHttpServer', () => {
  it('the probe server answers /healthz and /readyz, not /metrics', async () => {
    let ready = false;
    const probes = await startHttpServer({
      port: 0,
      host: '127.0.0.1',
      isReady: () => ready,
      logger: new MemoryLogger(),
    });
    servers.push(probes);
    expect(await get(probes, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    expect((await get(probes, '/readyz')).status).toBe(503);
    ready = true;
    expect((await get(probes, '/readyz')).status).toBe(200);
    expect((await get(probes, '/metrics')).status).toBe(404);
  });

  it('the metrics server answers /metrics, not the probes', async () => {
    const registry = new prom.Registry();
    new prom.Counter({ name: 'demo_total', help: 'demo', registers: [registry] }).inc();
    const metrics = await startHttpServer({
      port: 0,
      host: '127.0.0.1',
      registry,
      logger: new MemoryLogger(),
    });
    servers.push(metrics);
    const res = await get(metrics, '/metrics');
    expect(res.status).toBe(200);
    expect(res.body).toContain('demo_total 1');
    expect((await get(metrics, '/healthz')).status).toBe(404);
    expect((await get(metrics, '/readyz')).status).toBe(404);
  });
});
