/**
 * The SandboxSession source survives the loss of its API server: run as a real process (dot-i's
 * Operator and all; nothing global stubbed), it must still be alive and delivering events after
 * the server reset its stream, went away, came back, answered 410 and sent an in-stream ERROR
 * event. dot-i's own watchResource ends the process with exit code 1 at the first of these.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { build } from 'esbuild';

import { FakeWatchServer, session, until } from './fake-watch-server.js';

const here = dirname(fileURLToPath(import.meta.url));

describe('startSessionWatch in a child process', () => {
  let dir: string;
  let bundle: string;
  let server: FakeWatchServer;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    const cache = join(here, '../../../node_modules/.cache');
    mkdirSync(cache, { recursive: true });
    dir = mkdtempSync(join(cache, 'session-watch-'));
    bundle = join(dir, 'child.mjs');
    await build({
      entryPoints: [join(here, 'session-watch-child.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: bundle,
      packages: 'external',
      logLevel: 'warning',
      alias: { '@sandbox-platform/api': join(here, '../../../../crds/src/index.ts') },
    });
  });

  afterAll(async () => {
    child?.kill('SIGKILL');
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is still alive and delivering events after the API server reset, left, came back, said 410 and sent ERROR', async () => {
    server = new FakeWatchServer();
    await server.start();
    const kubeconfig = join(dir, 'kubeconfig.yaml');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: c, cluster: {server: "http://127.0.0.1:${server.port}", insecure-skip-tls-verify: true}}]`,
        'users: [{name: u, user: {token: x}}]',
        'contexts: [{name: c, context: {cluster: c, user: u}}]',
        'current-context: c',
        '',
      ].join('\n'),
    );
    const lines: Array<Record<string, unknown>> = [];
    let exit: { code: number | null; signal: string | null } | undefined;
    let stderr = '';
    child = spawn(process.execPath, [bundle], {
      env: { PATH: process.env.PATH, HOME: dir, KUBECONFIG: kubeconfig, WATCH_NAMESPACES: 'ns1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let partial = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop() ?? '';
      for (const p of parts) if (p) lines.push(JSON.parse(p) as Record<string, unknown>);
    });
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code, signal) => (exit = { code, signal }));
    const alive = (what: string) => (): boolean => {
      if (exit)
        throw new Error(`the source exited (${JSON.stringify(exit)}) while waiting for ${what}:\n${stderr}`);
      return true;
    };
    const waitFor = (what: string, check: () => boolean): Promise<void> =>
      until(what, () => alive(what)() && check(), 15_000);
    const delivered = (key: string): boolean => lines.some((l) => l.event && l.key === key);

    await waitFor('the first stream', () => server.openStreams === 1);
    server.send('ADDED', session('s1', 'ns1', '5'));
    await waitFor('event s1', () => delivered('ns1/s1'));

    // The API server dies (its connections reset, nothing listens), then comes back answering a
    // 410 and then a stream that begins with an in-stream ERROR 410, then a good stream.
    await server.stop();
    await waitFor('two failed attempts while nothing listens', () => warnings() >= 2);
    server.answer({ kind: 'status', code: 410 }, { kind: 'error-event', code: 410 });
    await server.start();
    // requests: 1 the first stream, 2 the 410, 3 the stream with the ERROR event, 4 a good stream
    await waitFor(
      'the good stream after the errors',
      () => server.requests.length === 4 && server.openStreams === 1,
    );
    server.send('ADDED', session('s1', 'ns1', '5'));
    server.send('ADDED', session('s2', 'ns1', '7'));
    await waitFor('event s2', () => delivered('ns1/s2'));

    expect(exit).toBeUndefined();
    expect(lines.filter((l) => l.event).map((l) => `${String(l.event)} ${String(l.key)}`)).toEqual([
      'ADDED ns1/s1',
      'ADDED ns1/s1',
      'ADDED ns1/s2',
    ]);
    expect(
      server.requests.every((r) => r.path === '/apis/sandbox.dev/v1alpha1/namespaces/ns1/sandboxsessions'),
    ).toBe(true);

    function warnings(): number {
      return lines.filter((l) => l.message === 'session watch failed; watching again').length;
    }
  }, 60_000);
});
