/**
 * The texts the gateway runs in sandboxes (launcher.ts, fs-scripts.ts, watch-scripts.ts): their
 * shape, their parsing, and what they do in a real bash with GNU find on a temporary directory.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFile, mkdtemp, mkdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';

import { FileType, EventType } from '../../../src/e2b/gen/filesystem/filesystem_pb.js';
import {
  EXIT_EXISTS,
  EXIT_NOT_DIRECTORY,
  EXIT_NOT_FOUND,
  freshBash,
  listScript,
  makeDirScript,
  parseEntries,
  statScript,
} from '../../../src/e2b/envd/fs-scripts.js';
import {
  checkEnvs,
  EXIT_NOT_READY,
  inputScript,
  ioDir,
  launcherScript,
  parseMarker,
  shellWord,
} from '../../../src/e2b/envd/launcher.js';
import { parseRecords, watcherScript } from '../../../src/e2b/envd/watch-scripts.js';

const IO = '0123456789abcdef0123456789abcdef';

/** Runs a command as the agent's exec does (bash -c), capturing stdout as bytes. */
async function bash(command: string): Promise<{ code: number; stdout: Buffer }> {
  try {
    const { stdout } = await promisify(execFile)('bash', ['-c', command], { encoding: 'buffer' });
    return { code: 0, stdout };
  } catch (err) {
    const e = err as { code: number; stdout: Buffer };
    return { code: e.code, stdout: e.stdout };
  }
}

describe('launcher', () => {
  it('runs a plain process with exec, its marker first', async () => {
    const text = launcherScript({
      cmd: '/bin/bash',
      args: ['-c', "echo 'it''s'; exit 7"],
      stdin: false,
    });
    expect(text.split('\n')).toHaveLength(2);
    expect(parseMarker(text)).toEqual({ cmd: '/bin/bash', args: ['-c', "echo 'it''s'; exit 7"] });
    const r = await bash(text);
    expect(r).toEqual({ code: 7, stdout: Buffer.from('its\n') });
  });

  it('gives stdin and terminal processes an io directory in the marker', () => {
    const stdin = launcherScript({ cmd: 'cat', args: [], stdin: true, tag: 't', cwd: '/x' }, () => IO);
    expect(parseMarker(stdin)).toEqual({ io: IO, cmd: 'cat', args: [], tag: 't', cwd: '/x', stdin: true });
    expect(stdin).toContain(`d=${ioDir(IO)}`);
    const pty = launcherScript(
      { cmd: '/bin/bash', args: ['-i'], stdin: true, pty: { cols: 80, rows: 24 } },
      () => IO,
      '/h/pty',
    );
    expect(parseMarker(pty)).toMatchObject({ io: IO, pty: true });
    expect(pty).toContain("exec '/h/pty' 80 24 -- '/bin/bash' '-i'");
  });

  it('keeps the io token of a marker whose JSON was cut, and ignores forged ones', () => {
    const text = launcherScript({ cmd: 'x', args: ['y'.repeat(5000)], stdin: true }, () => IO);
    expect(parseMarker(text.slice(0, 4096))).toEqual({ io: IO });
    expect(parseMarker('# e2b1 ../../etc/x eyJ9')).toBeUndefined();
    expect(parseMarker('# e2b1 - !!!')).toEqual({});
    expect(parseMarker('echo hi')).toBeUndefined();
    expect(() => ioDir('../x')).toThrow();
  });

  it('refuses what bash cannot carry or the agent would refuse', () => {
    expect(() => shellWord('a\0b')).toThrow(/NUL/);
    expect(() => checkEnvs({ 'BAD-NAME': 'x' })).toThrow(/invalid environment variable name/);
    expect(() => launcherScript({ cmd: '', args: [], stdin: false })).toThrow(/empty/);
    expect(() => launcherScript({ cmd: 'x', args: [], stdin: false, pty: { cols: 0, rows: 5 } })).toThrow(
      /pty size/,
    );
    expect(inputScript(IO)).toContain(`exec cat >${ioDir(IO)}/in`);
  });
});

/**
 * The SDKs' `/bin/bash -l -c <command>` in a real bash started as the agent starts a process, with
 * a HOME of its own whose ~/.profile counts its runs: the login environment is taken once.
 */
describe('login commands in a real bash', () => {
  let home: string;
  let envFile: string;
  const PROFILE = [
    'echo run >>"$HOME/runs"',
    `export FROM_PROFILE="a b
c'd"`,
    'export PATH="/opt/profile-bin:$PATH"',
    'export GREETING=profile',
    '',
  ].join('\n');
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'e2b-login-'));
  });
  afterAll(async () => {
    await rm(home, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await rm(join(home, 'runs'), { force: true });
    await writeFile(join(home, '.profile'), PROFILE);
    envFile = join(home, `env-${Math.random().toString(16).slice(2)}`);
  });

  async function run(
    command: string,
    env: Record<string, string> = {},
    file = envFile,
  ): Promise<{ code: number; stdout: string; stderr: string; pid: number }> {
    const text = launcherScript(
      { cmd: '/bin/bash', args: ['-l', '-c', command], stdin: false, env },
      undefined,
      undefined,
      file,
    );
    const child = spawn('bash', ['--noprofile', '--norc', '-c', text], {
      env: { PATH: process.env.PATH, HOME: home, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const [code] = (await once(child, 'close')) as [number];
    return { code, stdout, stderr, pid: child.pid! };
  }
  const runs = async (): Promise<number> =>
    (await readFile(join(home, 'runs'), 'utf8').catch(() => '')).split('\n').filter(Boolean).length;

  it('sources the profile once, then runs each command in the process with its environment', async () => {
    // What a real login shell makes of PATH (the host's /etc/profile sets it, ~/.profile prepends).
    const login = await promisify(execFile)('/bin/bash', ['-l', '-c', 'printf %s "$PATH"'], {
      env: { PATH: process.env.PATH, HOME: home },
    });
    expect(login.stdout).toMatch(/^\/opt\/profile-bin:/);
    await rm(join(home, 'runs'));
    const cmd = 'echo "$FROM_PROFILE|$PATH|$$"; echo err >&2; exit 3';
    const first = await run(cmd);
    const second = await run(cmd);
    expect(await runs()).toBe(1);
    for (const r of [first, second]) {
      expect(r.code).toBe(3);
      expect(r.stderr).toBe('err\n');
      // $$ is the process the agent started: the command ran in it, not in a child.
      expect(r.stdout).toBe(`a b\nc'd|${login.stdout}|${r.pid}\n`);
    }
  });

  it("applies the request's envs over the profile's and keeps none of them", async () => {
    expect((await run('echo "$GREETING"', { GREETING: 'hello' })).stdout).toBe('hello\n');
    expect((await run('echo "$GREETING"')).stdout).toBe('profile\n');
    expect((await run('echo "[$ONLY_HERE]"', { ONLY_HERE: 'x' })).stdout).toBe('[x]\n');
    expect((await run('echo "[$ONLY_HERE]"')).stdout).toBe('[]\n');
    expect(await readFile(envFile, 'utf8')).not.toMatch(/hello|ONLY_HERE/);
  });

  it('takes the login environment again when a login file changed', async () => {
    expect((await run('echo "[$ADDED]"')).stdout).toBe('[]\n');
    await appendFile(join(home, '.profile'), 'export ADDED=later\n');
    const future = new Date(Date.now() + 5000);
    await utimes(join(home, '.profile'), future, future);
    expect((await run('echo "[$ADDED]"')).stdout).toBe('[later]\n');
    expect(await runs()).toBe(2);
  });

  it("sources BASH_ENV as bash -c does and leaves none of the launcher's names behind", async () => {
    await writeFile(join(home, 'bash-env'), 'FROM_BASH_ENV=yes\n');
    const r = await run('echo "$FROM_BASH_ENV|${__e2b_f-unset}|$(type -t __e2b_login)"', {
      BASH_ENV: join(home, 'bash-env'),
    });
    expect(r.stdout).toBe('yes|unset|\n');
  });

  it('runs the command in a real login shell when the environment cannot be kept', async () => {
    const nowhere = join(home, 'missing-dir', 'env');
    for (let i = 0; i < 2; i++) expect((await run('echo "$GREETING"', {}, nowhere)).stdout).toBe('profile\n');
    // Each command ran a login shell (the capture fails before its own: its file cannot be made).
    expect(await runs()).toBe(2);
  });

  it('gives a stdin command its FIFO as the stdin of the process', () => {
    const text = launcherScript({ cmd: '/bin/bash', args: ['-l', '-c', 'cat'], stdin: true }, () => IO);
    expect(text).toContain('exec <"$d/in"');
    expect(text).toContain("eval 'cat'");
    expect(text).not.toContain(`exec '/bin/bash' '-l' '-c' 'cat' <"$d/in"`);
  });
});

describe('input scripts in a real bash', () => {
  it('wait for the FIFO the launcher makes and never create a file in its place', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'e2b-in-'));
    const script = inputScript(IO).replaceAll(ioDir(IO), dir);
    try {
      // The FIFO does not exist yet: the writer waits, then gives up with EXIT_NOT_READY (3)...
      const early = await bash(`${script.replace('-gt 50', '-gt 2')}`);
      expect(early.code).toBe(EXIT_NOT_READY);
      await expect(stat(join(dir, 'in'))).rejects.toMatchObject({ code: 'ENOENT' });
      // ...and writes once a reader holds it (the launcher's process).
      await bash(`mkfifo ${join(dir, 'in')}`);
      const reader = bash(`cat ${join(dir, 'in')}`);
      await bash(`printf typed | {\n${script}\n}`);
      expect((await reader).stdout.toString()).toBe('typed');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('filesystem scripts in a real bash', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'e2b-fs-'));
    await mkdir(join(dir, 'sub/deeper'), { recursive: true });
    await writeFile(join(dir, 'sub/a file\twith tab'), 'abc');
    await symlink('sub', join(dir, 'link'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('stat prints one entry: type, size, mode, owner, time; a symlink as a symlink', async () => {
    const file = await bash(freshBash(statScript(), [join(dir, 'sub/a file\twith tab')]));
    const [e] = parseEntries(file.stdout);
    expect(e).toMatchObject({
      name: 'a file\twith tab',
      type: FileType.FILE,
      size: 3n,
      path: join(dir, 'sub/a file\twith tab'),
    });
    expect(e!.permissions).toMatch(/^-rw/);
    expect(Number(e!.modifiedTime!.seconds)).toBeGreaterThan(1_600_000_000);
    const link = parseEntries((await bash(freshBash(statScript(), [join(dir, 'link')]))).stdout)[0];
    expect(link).toMatchObject({ type: FileType.SYMLINK, symlinkTarget: 'sub' });
    expect((await bash(freshBash(statScript(), [join(dir, 'none')]))).code).toBe(EXIT_NOT_FOUND);
  });

  it('list goes down to the depth asked, through a symlinked directory', async () => {
    const one = parseEntries((await bash(freshBash(listScript(), [dir, '1']))).stdout);
    expect(one.map((e) => e.name).sort()).toEqual(['link', 'sub']);
    const two = parseEntries((await bash(freshBash(listScript(), [join(dir, 'link'), '2']))).stdout);
    expect(two.map((e) => e.name).sort()).toEqual(['a file\twith tab', 'deeper']);
    expect((await bash(freshBash(listScript(), [join(dir, 'sub/a file\twith tab'), '1']))).code).toBe(
      EXIT_NOT_DIRECTORY,
    );
  });

  it('make dir tells an existing path apart', async () => {
    const made = await bash(freshBash(makeDirScript(), [join(dir, 'new/x')]));
    expect(parseEntries(made.stdout)[0]).toMatchObject({ name: 'x', type: FileType.DIRECTORY });
    expect((await bash(freshBash(makeDirScript(), [join(dir, 'new/x')]))).code).toBe(EXIT_EXISTS);
  });

  it('drops a cut last entry', () => {
    const whole = Buffer.from('f\x003\x00644\x00-rw-r--r--\x00u\x00g\x001.5\x00\x00/w/a\x00');
    expect(parseEntries(whole)).toHaveLength(1);
    expect(parseEntries(Buffer.concat([whole, Buffer.from('f\x004\x00644')]))).toHaveLength(1);
  });
});

describe('watcher', () => {
  it('parses records across chunk boundaries', () => {
    const first = parseRecords(Buffer.from('S\0C a b\0W x'));
    expect(first.records).toEqual([
      { kind: 'ready' },
      { kind: 'event', type: EventType.CREATE, name: 'a b' },
    ]);
    const next = parseRecords(Buffer.concat([first.rest, Buffer.from('.txt\0R gone\0')]));
    expect(next.records).toEqual([
      { kind: 'event', type: EventType.WRITE, name: 'x.txt' },
      { kind: 'event', type: EventType.REMOVE, name: 'gone' },
    ]);
  });

  it('reports a creation after its first scan, and exits 44 for a missing directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'e2b-watch-'));
    try {
      const script = `( sleep 0.3; echo hi > ${shellWord(join(dir, 'f'))}; sleep 1; rm -rf ${shellWord(dir)} ) & ${watcherScript(dir, true, undefined)}`;
      const r = await bash(script);
      expect(r.code).toBe(0);
      expect(parseRecords(r.stdout).records.slice(0, 2)).toEqual([
        { kind: 'ready' },
        { kind: 'event', type: EventType.CREATE, name: 'f' },
      ]);
      expect((await bash(watcherScript(join(dir, 'none'), false, undefined))).code).toBe(44);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
