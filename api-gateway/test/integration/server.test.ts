/**
 * The composition root as a real process (src/server.ts bundled with esbuild): config validated
 * at start (fail fast), /readyz after the watches synced, and graceful SIGTERM: an exec in flight
 * completes, then the process exits 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { SandboxClient } from '@sandbox-platform/client';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { GatewayEnv, KEYS, MASTER_KEY } from '@sandbox-platform/test-support/gateway';
import { buildServerBundle } from './server-bundle.js';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function exited(child: ChildProcess): Promise<{ code: number | null; stderr: string; stdout: string }> {
  let stderr = '';
  let stdout = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr, stdout })));
}

describe('server.ts as a process', () => {
  const env = new GatewayEnv();
  let dir: string;
  let bundle: string;
  let baseEnv: Record<string, string>;
  beforeAll(async () => {
    await env.setup();
    ({ dir, bundle } = await buildServerBundle());
    const keys = join(dir, 'keys.json');
    writeFileSync(keys, JSON.stringify({ keys: [{ id: 'a', key: KEYS.a, namespaces: [env.nsA.name] }] }));
    const master = join(dir, 'master-key');
    writeFileSync(master, MASTER_KEY);
    baseEnv = {
      PATH: process.env.PATH ?? '',
      KUBECONFIG: process.env.KUBECONFIG!,
      GATEWAY_API_KEYS_FILE: keys,
      SANDBOX_MASTER_KEY_FILE: master,
      GATEWAY_NAMESPACES: `${env.nsA.name},${env.nsB.name}`,
      GATEWAY_AGENT_PORT: String(env.agentPort),
      GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_LOG_LEVEL: 'info',
      // Never the default 9090: suites run in parallel on one host.
      GATEWAY_METRICS_PORT: '0',
    };
  });
  afterAll(async () => {
    await env.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to start with an invalid configuration, listing the problem', async () => {
    const child = spawn(process.execPath, [bundle], {
      env: { ...baseEnv, GATEWAY_PORT: 'eighty', GATEWAY_NAMESPACES: '' },
    });
    const { code, stderr } = await exited(child);
    expect(code).toBe(1);
    const line = JSON.parse(stderr.trim().split('\n').at(-1)!) as {
      msg: string;
      service: string;
      err: { message: string };
    };
    expect([line.msg, line.service]).toEqual(['api-gateway failed to start', 'sandbox-api-gateway']);
    expect(line.err.message).toMatch(/GATEWAY_PORT must be integer/);
  });

  it('serves once synced and finishes an in-flight exec on SIGTERM before exiting 0', async () => {
    const port = await freePort();
    const metricsPort = await freePort();
    const child = spawn(process.execPath, [bundle], {
      env: { ...baseEnv, GATEWAY_PORT: String(port), GATEWAY_METRICS_PORT: String(metricsPort) },
    });
    const done = exited(child);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(
      () => fetch(`${url}/readyz`).then((r) => r.status),
      predicate('/readyz 200', (s: number) => s === 200),
      { timeoutMs: 30_000 },
    );
    // /metrics on its own port (with the process metrics), 404 on the API port.
    const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect([scrape.status, (await scrape.text()).includes('process_cpu_seconds_total')]).toEqual([200, true]);
    expect((await fetch(`${url}/metrics`)).status).toBe(404);
    const client = new SandboxClient({ baseUrl: url, apiKey: KEYS.a, retry: { retries: 0 } });
    await client.createSession({ name: 'graceful' });
    await env.makeReady(env.nsA.name, 'graceful');
    await client.exec('graceful', { command: 'true' });

    const inFlight = client.exec('graceful', { command: 'sleep 2; echo finished' });
    await new Promise((r) => setTimeout(r, 500));
    child.kill('SIGTERM');
    const result = await inFlight;
    expect(result).toMatchObject({ exitCode: 0, stdout: 'finished\n' });
    // Regression: the caller's keep-alive connection (still open on the client's side) once held
    // the process for the 72 s keep-alive timeout. It must exit without the client closing it; the
    // 30 s race is only a safety net under the 90 s test timeout, not a speed bound.
    const exit = await Promise.race([
      done,
      new Promise<'held open'>((r) => setTimeout(() => r('held open'), 30_000).unref()),
    ]);
    if (exit === 'held open') throw new Error('the gateway did not exit after answering the in-flight exec');
    const { code, stdout } = exit;
    expect(code).toBe(0);
    expect(stdout).toMatch(/shutting down/);
    expect(stdout).not.toContain(KEYS.a);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
