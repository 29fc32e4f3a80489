/**
 * The official JS e2b SDK (npm e2b, pinned in test-e2e) against the gateway's E2B API, with real
 * sandbox agents behind it (helpers/e2b-app.ts plays the operator): create, commands, files,
 * terminal, timeout, pause/connect, list, kill, as the SDK sees them. Tenancy, tokens and bad
 * input: sdk-js-refusals.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
// The SDK's ESM build: jest cannot load its CommonJS main (it require()s the ESM-only chalk).
import { CommandExitError, FileNotFoundError, Sandbox } from 'e2b/dist/index.mjs';

import { KEYS } from '../../helpers/app.js';
import { buildPtyHelper } from '../../helpers/agent-app.js';
import { startE2bApp, type E2bApp } from './helpers/e2b-app.js';

/** Polls `check` until it holds (the SDK's callbacks and watch events arrive asynchronously). */
async function eventually(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('e2b JS SDK against the gateway', () => {
  let e: E2bApp;
  let sbx: Sandbox;
  beforeAll(async () => {
    e = await startE2bApp({ ptyHelper: await buildPtyHelper() });
    sbx = await Sandbox.create(e.opts(KEYS.a));
  }, 60_000);
  afterAll(async () => {
    await e.close();
  });

  it('creates a sandbox and runs commands: stdout, stderr, exit code, CommandExitError', async () => {
    expect(sbx.sandboxId).toMatch(/^sbx-[a-z0-9]+\.team-a$/);
    const r = await sbx.commands.run('echo hi; echo err >&2');
    expect(r).toMatchObject({ exitCode: 0, stdout: 'hi\n', stderr: 'err\n' });
    const failed = await sbx.commands.run('echo out; exit 3').catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(CommandExitError);
    expect(failed).toMatchObject({ exitCode: 3, stdout: 'out\n' });
    // envs and cwd of one command; each command is its own process (no shell state between them).
    const envd = await sbx.commands.run('echo "$GREETING $(pwd)"; cd /; export X=1', {
      envs: { GREETING: 'hello' },
      cwd: e.workspace,
    });
    expect(envd.stdout).toBe(`hello ${e.workspace}\n`);
    expect((await sbx.commands.run('echo "[$X]"')).stdout).toBe('[]\n');
  });

  it('streams output to callbacks as it comes', async () => {
    const seen: string[] = [];
    const r = await sbx.commands.run('for i in 1 2 3; do echo $i; sleep 0.05; done', {
      onStdout: (d) => void seen.push(d),
    });
    expect(r.stdout).toBe('1\n2\n3\n');
    expect(seen.join('')).toBe('1\n2\n3\n');
  });

  it('runs a background command, lists it, connects to it, kills it', async () => {
    const h = await sbx.commands.run('echo started; sleep 30', { background: true });
    await eventually(() => h.stdout === 'started\n', 'background output');
    const listed = await sbx.commands.list();
    expect(listed.map((p) => p.pid)).toContain(h.pid);
    expect(listed.find((p) => p.pid === h.pid)).toMatchObject({
      cmd: '/bin/bash',
      args: ['-l', '-c', 'echo started; sleep 30'],
    });
    const again = await sbx.commands.connect(h.pid);
    expect(again.pid).toBe(h.pid);
    expect(await h.kill()).toBe(true);
    const end = await again.wait().catch((err: unknown) => err);
    expect(end).toBeInstanceOf(CommandExitError);
    expect(end).toMatchObject({ exitCode: -1, error: 'signal: killed' });
    await eventually(() => h.exitCode !== undefined, 'the handle to see the end');
    expect(await sbx.commands.kill(h.pid)).toBe(false);
    expect((await sbx.commands.list()).map((p) => p.pid)).not.toContain(h.pid);
  });

  it('gives a command stdin: sendStdin, then closeStdin ends it', async () => {
    const h = await sbx.commands.run('cat; echo done', { background: true, stdin: true });
    await h.sendStdin('line 1\n');
    await h.sendStdin(new TextEncoder().encode('line 2\n'));
    await eventually(() => h.stdout === 'line 1\nline 2\n', 'echoed stdin');
    await h.closeStdin();
    const r = await h.wait();
    expect(r).toMatchObject({ exitCode: 0, stdout: 'line 1\nline 2\ndone\n' });
  });

  it('writes, reads, lists, stats, renames and removes files, text and binary', async () => {
    const bytes = new Uint8Array(256).map((_, i) => i);
    const info = await sbx.files.write('dir/hello.txt', 'hello e2b');
    expect(info).toMatchObject({ name: 'hello.txt', type: 'file', path: `${e.workspace}/dir/hello.txt` });
    await sbx.files.write(`${e.workspace}/dir/blob.bin`, bytes.buffer);
    expect(await sbx.files.read('dir/hello.txt')).toBe('hello e2b');
    expect(await sbx.files.read('dir/blob.bin', { format: 'bytes' })).toEqual(bytes);
    const entries = await sbx.files.list('dir');
    expect(entries.map((x) => [x.name, x.type, x.size]).sort()).toEqual([
      ['blob.bin', 'file', 256],
      ['hello.txt', 'file', 9],
    ]);
    expect(entries[0]!.modifiedTime).toBeInstanceOf(Date);
    expect(await sbx.files.exists('dir/hello.txt')).toBe(true);
    expect(await sbx.files.exists('dir/none')).toBe(false);
    expect(await sbx.files.getInfo('dir')).toMatchObject({ type: 'dir', name: 'dir' });
    expect(await sbx.files.makeDir('dir/sub/deeper')).toBe(true);
    expect(await sbx.files.makeDir('dir/sub/deeper')).toBe(false);
    expect(await sbx.files.rename('dir/hello.txt', 'dir/sub/moved.txt')).toMatchObject({
      name: 'moved.txt',
      type: 'file',
    });
    expect(
      (await sbx.files.list('dir', { depth: 3 })).map((x) => x.path.slice(e.workspace.length)).sort(),
    ).toEqual(['/dir/blob.bin', '/dir/sub', '/dir/sub/deeper', '/dir/sub/moved.txt']);
    await sbx.files.remove('dir/sub');
    expect(await sbx.files.exists('dir/sub/moved.txt')).toBe(false);
    await expect(sbx.files.read('dir/sub/moved.txt')).rejects.toBeInstanceOf(FileNotFoundError);
    // Several files in one multipart upload.
    const many = await sbx.files.write([
      { path: 'm/a.txt', data: 'A' },
      { path: 'm/b.txt', data: 'B' },
    ]);
    expect(many.map((f) => f.name)).toEqual(['a.txt', 'b.txt']);
    expect(await sbx.files.read('m/b.txt')).toBe('B');
  });

  it("watches a directory (the agent's inotify watch): create, write, rename and remove events", async () => {
    await sbx.files.makeDir('watched');
    const events: string[] = [];
    const handle = await sbx.files.watchDir('watched', (ev) => void events.push(`${ev.type} ${ev.name}`));
    await sbx.files.write('watched/new.txt', 'one');
    await eventually(() => events.includes('create new.txt'), 'a create event');
    await sbx.commands.run(`printf more >> ${e.workspace}/watched/new.txt`);
    await eventually(() => events.includes('write new.txt'), 'a write event');
    await sbx.files.rename('watched/new.txt', 'watched/renamed.txt');
    await eventually(
      () => events.includes('rename new.txt') && events.includes('create renamed.txt'),
      'rename events',
    );
    await sbx.files.remove('watched/renamed.txt');
    await eventually(() => events.includes('remove renamed.txt'), 'a remove event');
    await handle.stop();
  });

  it('opens a terminal, resizes it and types into it', async () => {
    const out: string[] = [];
    const decoder = new TextDecoder();
    const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => void out.push(decoder.decode(d)) });
    await sbx.pty.resize(pty.pid, { cols: 100, rows: 40 });
    await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size; echo typed-$((6*7))\n'));
    await eventually(() => out.join('').includes('typed-42'), 'the typed command to run', 15_000);
    expect(out.join('')).toContain('40 100');
    await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('exit\n'));
    const end = await pty.wait();
    expect(end.exitCode).toBe(0);
  });

  it('sets the timeout, pauses, connects (files kept), lists and kills', async () => {
    const other = await Sandbox.create({ ...e.opts(KEYS.a), metadata: { purpose: 'pause-test' } });
    await other.files.write('kept.txt', 'still here');
    await other.setTimeout(600_000);
    const info = await other.getInfo();
    expect(info).toMatchObject({
      sandboxId: other.sandboxId,
      metadata: { purpose: 'pause-test' },
      state: 'running',
    });
    expect(info.endAt.getTime() - Date.now()).toBeGreaterThan(590_000);
    await other.pause();
    expect((await Sandbox.getInfo(other.sandboxId, e.opts(KEYS.a))).state).toBe('paused');
    const back = await Sandbox.connect(other.sandboxId, e.opts(KEYS.a));
    expect(await back.files.read('kept.txt')).toBe('still here');
    expect((await back.commands.run('echo resumed')).stdout).toBe('resumed\n');
    const page = await Sandbox.list({
      ...e.opts(KEYS.a),
      query: { metadata: { purpose: 'pause-test' } },
    }).nextItems();
    expect(page.map((s) => s.sandboxId)).toEqual([other.sandboxId]);
    expect(await back.kill()).toBe(true);
    expect(await Sandbox.kill(other.sandboxId, e.opts(KEYS.a))).toBe(false);
  });
});
