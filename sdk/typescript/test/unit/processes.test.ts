/** Background processes and stdin in the TypeScript SDK, against a scripted fetch. */
import { describe, expect, it } from '@jest/globals';

import { GatewayError, NotFoundError, ProtocolError, SandboxClient } from '../../src/index.js';
import type { ProcessFollowEvent, ProcessInfo } from '../../src/index.js';
import { FakeFetch, enc, json, problem, type Step } from './fake-fetch.js';

const INFO: ProcessInfo = {
  id: '0123456789ab',
  pid: 42,
  command: 'python3 -m http.server 8000',
  state: 'running',
  startedAt: '2030-01-01T00:00:00.000Z',
  stdout: { size: 0, dropped: 0 },
  stderr: { size: 0, dropped: 0 },
};

function client(steps: Step[]): { fake: FakeFetch; c: SandboxClient } {
  const fake = new FakeFetch(steps);
  const c = new SandboxClient({
    baseUrl: 'http://gw.test:8080',
    apiKey: 'k-123',
    namespace: 'team-a',
    fetch: fake.fetch,
    retry: { initialDelayMs: 1 },
  });
  return { fake, c };
}

describe('processes', () => {
  it('starts (POST, never retried), lists, describes and removes', async () => {
    const { fake, c } = client([
      json(201, INFO),
      json(200, { processes: [INFO] }),
      json(200, INFO),
      { status: 204 },
    ]);
    expect(await c.startProcess('s 1', { command: INFO.command, cwd: 'site' })).toEqual(INFO);
    expect(await c.listProcesses('s 1')).toEqual([INFO]);
    expect(await c.getProcess('s 1', INFO.id)).toEqual(INFO);
    await c.removeProcess('s 1', INFO.id);
    expect(fake.calls.map((x) => `${x.method} ${x.url.pathname}${x.url.search}`)).toEqual([
      'POST /v1/sessions/s%201/processes?namespace=team-a',
      'GET /v1/sessions/s%201/processes?namespace=team-a',
      'GET /v1/sessions/s%201/processes/0123456789ab?namespace=team-a',
      'DELETE /v1/sessions/s%201/processes/0123456789ab?namespace=team-a',
    ]);
    expect(JSON.parse(fake.calls[0]!.body!)).toEqual({ command: INFO.command, cwd: 'site' });
  });

  it('does not retry a start that may have arrived (502 after sending)', async () => {
    const { c, fake } = client([problem(502, 'upstream-error'), json(201, INFO)]);
    await expect(c.startProcess('s', { command: 'x' })).rejects.toBeInstanceOf(GatewayError);
    expect(fake.calls).toHaveLength(1);
  });

  it('reads output from offsets, signals and waits with their query and body', async () => {
    const chunk = { offset: 6, nextOffset: 10, skipped: 0, data: 'abcd', encoding: 'utf-8' };
    const { fake, c } = client([
      json(200, { process: INFO, stdout: chunk, stderr: { ...chunk, offset: 0, nextOffset: 0, data: '' } }),
      json(200, INFO),
      json(200, { ...INFO, state: 'exited', exitCode: 143, signal: 'SIGTERM' }),
    ]);
    const out = await c.processOutput('s', INFO.id, { stdoutOffset: 6, maxBytes: 4 });
    expect(out.stdout.data).toBe('abcd');
    await c.signalProcess('s', INFO.id);
    expect(await c.waitProcess('s', INFO.id, 10)).toMatchObject({ exitCode: 143 });
    expect(fake.calls.map((x) => `${x.method} ${x.url.pathname}${x.url.search}`)).toEqual([
      'GET /v1/sessions/s/processes/0123456789ab/output?stdoutOffset=6&maxBytes=4&namespace=team-a',
      'POST /v1/sessions/s/processes/0123456789ab/signal?namespace=team-a',
      'GET /v1/sessions/s/processes/0123456789ab/wait?timeoutSeconds=10&namespace=team-a',
    ]);
    expect(JSON.parse(fake.calls[1]!.body!)).toEqual({ signal: 'SIGTERM' });
  });

  it('follows: output events then exit; a follow cut at its timeout ends without exit', async () => {
    const lines = [
      '{"type":"stdout","offset":0,"skipped":0,"data":"a\\n","encoding":"utf-8"}\n',
      '{"type":"exit","exitCode":0}\n',
    ];
    const { fake, c } = client([
      { status: 200, chunks: lines.map(enc), headers: { 'content-type': 'application/x-ndjson' } },
      { status: 200, chunks: [enc(lines[0]!)], headers: { 'content-type': 'application/x-ndjson' } },
      {
        status: 200,
        chunks: [enc('{"type":"weird"}\n')],
        headers: { 'content-type': 'application/x-ndjson' },
      },
    ]);
    const all: ProcessFollowEvent[] = [];
    for await (const ev of c.followProcess('s', INFO.id, { stdoutOffset: 0, timeoutSeconds: 5 }))
      all.push(ev);
    expect(all.map((e) => e.type)).toEqual(['stdout', 'exit']);
    expect(fake.calls[0]!.url.search).toBe('?stdoutOffset=0&timeoutSeconds=5&namespace=team-a');
    const cut: ProcessFollowEvent[] = [];
    for await (const ev of c.followProcess('s', INFO.id)) cut.push(ev);
    expect(cut.map((e) => e.type)).toEqual(['stdout']);
    const bad = async (): Promise<void> => {
      for await (const _ev of c.followProcess('s', INFO.id)) void _ev;
    };
    await expect(bad()).rejects.toBeInstanceOf(ProtocolError);
  });

  it('maps the process problems: 404 process-not-found, 400 signal-not-allowed', async () => {
    const { c } = client([problem(404, 'process-not-found'), problem(400, 'signal-not-allowed')]);
    const missing = await c.getProcess('s', 'ffffffffffff').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as GatewayError).code).toBe('process-not-found');
    const refused = await c.signalProcess('s', INFO.id, 'SIGTERM').catch((e: unknown) => e);
    expect((refused as GatewayError).status).toBe(400);
    expect((refused as GatewayError).code).toBe('signal-not-allowed');
  });
});

describe('stdin on exec', () => {
  it('sends stdin and its encoding in the exec body', async () => {
    const { fake, c } = client([
      json(200, {
        stdout: '3\n',
        stderr: '',
        stdoutEncoding: 'utf-8',
        stderrEncoding: 'utf-8',
        exitCode: 0,
        durationMs: 1,
        truncated: false,
        timedOut: false,
        shellReset: false,
      }),
    ]);
    await c.exec('s', { command: 'wc -c', stdin: 'AAEC', stdinEncoding: 'base64' });
    expect(JSON.parse(fake.calls[0]!.body!)).toEqual({
      command: 'wc -c',
      stdin: 'AAEC',
      stdinEncoding: 'base64',
    });
  });
});
