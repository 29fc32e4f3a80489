/**
 * Background processes and stdin through the gateway, against a real agent (sandbox-agent/src
 * started in-process): REST routes, tenant checks, bad input as problem+json, and the agent's
 * problems passed through.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { LightMyRequestResponse } from 'fastify';

import { KEYS, auth } from '../../helpers/app.js';
import { startAgentApp, type AgentApp } from '../../helpers/agent-app.js';
import { expectProblem } from '../../helpers/problem.js';
import { kubeExec, ready, session } from '../../helpers/sessions.js';

interface Info {
  id: string;
  state: string;
  exitCode?: number;
  signal?: string;
  command: string;
  stdout: { size: number };
}

describe('process routes against a real agent', () => {
  let g: AgentApp;
  beforeAll(async () => {
    g = await startAgentApp();
  });
  afterAll(async () => {
    await g.close();
  });

  const call = (
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    payload?: object,
    key = KEYS.a,
  ): Promise<LightMyRequestResponse> =>
    g.app.inject({
      method,
      url: `/v1/sessions/demo${path}`,
      headers: auth(key),
      ...(payload ? { payload } : {}),
    });

  const start = async (command: string): Promise<Info> => {
    const res = await call('POST', '/processes', { command });
    expect(res.statusCode).toBe(201);
    const info = res.json<Info>();
    expect(res.headers.location).toBe(`/v1/sessions/demo/processes/${info.id}?namespace=team-a`);
    return info;
  };

  it('starts, lists, describes, reads, signals, waits for and removes a process', async () => {
    const p = await start('echo ready; exec sleep 300');
    expect(p).toMatchObject({ state: 'running', command: 'echo ready; exec sleep 300' });

    const list = await call('GET', '/processes');
    expect(list.statusCode).toBe(200);
    expect(list.json<{ processes: Info[] }>().processes.map((x) => x.id)).toContain(p.id);

    // The output route reads from offsets; wait until the line is there.
    let out = await call('GET', `/processes/${p.id}/output`);
    for (let i = 0; i < 100 && out.json<{ stdout: { data: string } }>().stdout.data === ''; i++) {
      await new Promise((r) => setTimeout(r, 50));
      out = await call('GET', `/processes/${p.id}/output`);
    }
    expect(out.json()).toMatchObject({
      process: { id: p.id },
      stdout: { offset: 0, nextOffset: 6, skipped: 0, data: 'ready\n', encoding: 'utf-8' },
    });
    const later = await call('GET', `/processes/${p.id}/output?stdoutOffset=2&maxBytes=2`);
    expect(later.json()).toMatchObject({ stdout: { offset: 2, nextOffset: 4, data: 'ad' } });

    const running = await call('DELETE', `/processes/${p.id}`);
    expectProblem(running, 409, 'process-running');

    const sig = await call('POST', `/processes/${p.id}/signal`, { signal: 'SIGTERM' });
    expect(sig.statusCode).toBe(200);
    const waited = await call('GET', `/processes/${p.id}/wait?timeoutSeconds=10`);
    expect(waited.json()).toMatchObject({ id: p.id, state: 'exited', exitCode: 143, signal: 'SIGTERM' });
    const described = await call('GET', `/processes/${p.id}`);
    expect(described.json()).toMatchObject({ state: 'exited', exitCode: 143 });

    const again = await call('POST', `/processes/${p.id}/signal`, { signal: 'SIGTERM' });
    expectProblem(again, 409, 'process-exited');

    const removed = await call('DELETE', `/processes/${p.id}`);
    expect(removed.statusCode).toBe(204);
    expectProblem(await call('GET', `/processes/${p.id}`), 404, 'process-not-found');
  });

  it('follows the output as NDJSON to the exit line', async () => {
    const p = await start('for i in 1 2 3; do echo line$i; sleep 0.05; done; echo oops >&2; exit 4');
    const res = await fetch(`${g.url}/v1/sessions/demo/processes/${p.id}/output/stream`, {
      headers: auth(KEYS.a),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; data?: string; exitCode?: number });
    const stdout = lines
      .filter((l) => l.type === 'stdout')
      .map((l) => l.data)
      .join('');
    expect(stdout).toBe('line1\nline2\nline3\n');
    expect(
      lines
        .filter((l) => l.type === 'stderr')
        .map((l) => l.data)
        .join(''),
    ).toBe('oops\n');
    expect(lines.at(-1)).toEqual({ type: 'exit', exitCode: 4 });
  });

  it('ends a follow without an exit line at its timeout (the client follows again from its offsets)', async () => {
    const p = await start('echo one; exec sleep 300');
    const res = await fetch(`${g.url}/v1/sessions/demo/processes/${p.id}/output/stream?timeoutSeconds=1`, {
      headers: auth(KEYS.a),
    });
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    expect(lines).toEqual([{ type: 'stdout', offset: 0, skipped: 0, data: 'one\n', encoding: 'utf-8' }]);
    await call('POST', `/processes/${p.id}/signal`, { signal: 'SIGKILL' });
    expect((await call('GET', `/processes/${p.id}/wait`)).json()).toMatchObject({ exitCode: 137 });
    expect((await call('DELETE', `/processes/${p.id}`)).statusCode).toBe(204);
  });

  it('answers bad input with problem+json', async () => {
    expectProblem(await call('GET', '/processes/0123456789ab'), 404, 'process-not-found');
    expectProblem(await call('GET', '/processes/not-an-id'), 404, 'process-not-found');
    const p = await start('exec sleep 300');
    const bad = await call('POST', `/processes/${p.id}/signal`, { signal: 'SIGSEGV' });
    expect(expectProblem(bad, 400, 'signal-not-allowed').detail).toContain('SIGTERM');
    expectProblem(await call('POST', `/processes/${p.id}/signal`, { signal: 15 }), 400, 'invalid-request');
    expectProblem(await call('POST', '/processes', { command: '' }), 400, 'invalid-request');
    expectProblem(await call('POST', '/processes', { command: 'true', extra: 1 }), 400, 'invalid-request');
    expectProblem(await call('GET', `/processes/${p.id}/output?stdoutOffset=-1`), 400, 'invalid-request');
    expectProblem(await call('GET', `/processes/${p.id}/wait?timeoutSeconds=301`), 400, 'invalid-request');
    await call('POST', `/processes/${p.id}/signal`, { signal: 'SIGKILL' });
    await call('GET', `/processes/${p.id}/wait`);
    await call('DELETE', `/processes/${p.id}`);
  });

  it("refuses another tenant's key and namespaces the key may not use", async () => {
    const p = await start('exec sleep 300');
    // Tenant B's key: its default namespace has no session "demo" (404); team-a is not its (403).
    expectProblem(await call('GET', '/processes', undefined, KEYS.b), 404, 'session-not-found');
    const forbidden = await g.app.inject({
      method: 'POST',
      url: `/v1/sessions/demo/processes/${p.id}/signal?namespace=team-a`,
      headers: auth(KEYS.b),
      payload: { signal: 'SIGKILL' },
    });
    expectProblem(forbidden, 403, 'forbidden');
    for (const [method, path] of [
      ['GET', `/processes/${p.id}?namespace=team-a`],
      ['GET', `/processes/${p.id}/output?namespace=team-a`],
      ['GET', `/processes/${p.id}/output/stream?namespace=team-a`],
      ['GET', `/processes/${p.id}/wait?namespace=team-a`],
      ['DELETE', `/processes/${p.id}?namespace=team-a`],
      ['POST', '/processes?namespace=team-a'],
    ] as const) {
      const res = await call(method, path, method === 'POST' ? { command: 'true' } : undefined, KEYS.b);
      expectProblem(res, 403, 'forbidden');
    }
    expectProblem(await call('GET', '/processes', undefined, 'wrong-key'), 401, 'unauthorized');
    // The process is untouched.
    expect((await call('GET', `/processes/${p.id}`)).json()).toMatchObject({ state: 'running' });
    await call('POST', `/processes/${p.id}/signal`, { signal: 'SIGKILL' });
    await call('GET', `/processes/${p.id}/wait`);
    await call('DELETE', `/processes/${p.id}`);
  });

  it('answers 501 for a KubernetesExec session', async () => {
    g.store.put(session('kx', 'team-a', ready('127.0.0.1'), kubeExec));
    const res = await g.app.inject({
      method: 'GET',
      url: '/v1/sessions/kx/processes',
      headers: auth(KEYS.a),
    });
    expectProblem(res, 501, 'not-supported');
  });
});

describe('stdin on exec against a real agent', () => {
  let g: AgentApp;
  beforeAll(async () => {
    g = await startAgentApp();
  });
  afterAll(async () => {
    await g.close();
  });

  const exec = (payload: object, path = '/exec'): Promise<LightMyRequestResponse> =>
    g.app.inject({ method: 'POST', url: `/v1/sessions/demo${path}`, headers: auth(KEYS.a), payload });

  it('feeds 1 MiB of binary stdin to cat exactly (base64 over the body limit of the test config)', async () => {
    const bytes = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919 + (i >> 8)) & 0xff;
    const res = await exec({
      command: 'cat | sha256sum | cut -c1-64',
      stdin: bytes.toString('base64'),
      stdinEncoding: 'base64',
    });
    expect(res.statusCode).toBe(200);
    const { createHash } = await import('node:crypto');
    expect(res.json<{ stdout: string }>().stdout.trim()).toBe(
      createHash('sha256').update(bytes).digest('hex'),
    );
  });

  it('gives text stdin to python-like readers, on the streamed variant too', async () => {
    const res = await exec({ command: 'wc -c', stdin: 'héllo\n' });
    expect(res.json()).toMatchObject({ exitCode: 0, stdout: '7\n' });
    const stream = await exec({ command: 'tr a-z A-Z', stdin: 'abc' }, '/exec/stream');
    expect(stream.body).toContain('"data":"ABC"');
  });

  it('refuses bad stdin with problem+json', async () => {
    expectProblem(await exec({ command: 'cat', stdin: 'x', stdinEncoding: 'hex' }), 400, 'invalid-request');
    expectProblem(
      await exec({ command: 'cat', stdin: 'not base64!', stdinEncoding: 'base64' }),
      400,
      'invalid-request',
    );
    expectProblem(await exec({ command: 'cat', stdin: 'x'.repeat(1398200) }), 400, 'invalid-request');
  });

  it('refuses stdin for a KubernetesExec session (501) rather than dropping it', async () => {
    g.store.put(session('kx', 'team-a', ready('127.0.0.1'), kubeExec));
    const res = await g.app.inject({
      method: 'POST',
      url: '/v1/sessions/kx/exec',
      headers: auth(KEYS.a),
      payload: { command: 'cat', stdin: 'x' },
    });
    expectProblem(res, 501, 'not-supported');
  });
});
