/**
 * The process table's spare bashes (processes/managed-process.ts SpareBash): a start after the
 * first runs in a bash started ahead, and gets exactly what a spawned process gets (env, session
 * env, directory, stdin, descriptors, its own session and group, exit status); spares killed
 * meanwhile or started with another session env are discarded (the start spawns); closing the
 * table kills them; a spare whose script was cut runs nothing.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createLogger } from '../../src/log.js';
import { type ManagedProcess, SpareBash } from '../../src/processes/managed-process.js';
import { ProcessTable } from '../../src/processes/process-table.js';
import { eventually } from './helpers/test-agent.js';

/** What a process reports of itself (the same whether spawned or a spare). */
const SELF = [
  'echo "$S|$FOO|$PWD|${__sbx_script-unset}"',
  'read -r -a st </proc/$$/stat; [ "${st[4]}" = $$ ] && [ "${st[5]}" = $$ ] && echo own-session-and-group',
  'readlink /proc/$$/fd/0',
  // The glob runs in this bash (no pipeline, no subshell): its descriptors, listed as they are.
  'fds=(/proc/$$/fd/*); echo "${fds[@]##*/}"',
  'echo err >&2',
  'exit 7',
].join('\n');

function text(proc: ManagedProcess, stream: 'stdout' | 'stderr'): string {
  const ring = proc.output[stream];
  return ring.read(0, ring.size).bytes.toString('utf8');
}

/** Live children of this process whose command line holds `fragment`. */
async function childrenMatching(fragment: string): Promise<number[]> {
  const { readdir } = await import('node:fs/promises');
  const out: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const [cmdline, st] = await Promise.all([
      readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => ''),
      readFile(`/proc/${entry}/stat`, 'utf8').catch(() => ''),
    ]);
    const rest = st.slice(st.lastIndexOf(')') + 2).split(' ');
    if (rest[0] !== 'Z' && Number(rest[1]) === process.pid && cmdline.includes(fragment))
      out.push(Number(entry));
  }
  return out;
}

describe('spare bashes of the process table', () => {
  const tables: ProcessTable[] = [];
  const lines: string[] = [];
  afterEach(async () => {
    for (const t of tables.splice(0)) await t.close();
    lines.length = 0;
  });

  function table(sessionEnv: Record<string, string>, spare = true): ProcessTable {
    const t = new ProcessTable({
      bashPath: 'bash',
      workspace: tmpdir(),
      env: { PATH: process.env.PATH, FOO: 'bar' },
      sessionEnv,
      maxProcesses: 8,
      outputBytes: 64 * 1024,
      logger: createLogger('info', (line) => void lines.push(line)),
      spare,
    });
    tables.push(t);
    return t;
  }

  async function run(t: ProcessTable, command: string, cwd?: string): Promise<ManagedProcess> {
    const proc = await t.start({ command, ...(cwd ? { cwd } : {}) });
    await proc.exited;
    return proc;
  }

  async function spares(t: ProcessTable, n = 2): Promise<void> {
    await eventually('the spares', () => Promise.resolve(t.spareCount >= n));
  }

  const started = (): Array<{ spare?: boolean }> =>
    lines
      .map((l) => JSON.parse(l) as { msg: string; spare?: boolean })
      .filter((l) => l.msg === 'process started');

  it('runs a later start in a spare, which gets what a spawned process gets', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'spare-'));
    try {
      const plain = table({ S: 'session value' }, false);
      const spawned = await run(plain, SELF, dir);
      const t = table({ S: 'session value' });
      await run(t, 'true');
      await spares(t);
      const fromSpare = await run(t, SELF, dir);
      expect(started().map((l) => l.spare)).toEqual([false, false, true]);
      expect(text(fromSpare, 'stdout')).toBe(text(spawned, 'stdout'));
      expect(text(fromSpare, 'stdout')).toMatch(
        new RegExp(
          `^session value\\|bar\\|${dir}\\|unset\\nown-session-and-group\\n/dev/null\\n0 1 2( \\d+)*\\n$`,
        ),
      );
      expect(text(fromSpare, 'stderr')).toBe('err\n');
      expect(fromSpare.info()).toMatchObject({ state: 'exited', exitCode: 7 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reports a spare killed by a signal as the process would be', async () => {
    const t = table({});
    await run(t, 'true');
    await spares(t);
    const proc = await t.start({ command: 'echo up; exec sleep 30' });
    await eventually('output', () => Promise.resolve(text(proc, 'stdout') === 'up\n'));
    t.signal(proc.id, 'SIGTERM');
    await proc.exited;
    expect(proc.info()).toMatchObject({ exitCode: 143, signal: 'SIGTERM' });
  });

  it('takes a long script (300 KB) whole', async () => {
    const t = table({});
    await run(t, 'true');
    await spares(t);
    const long = 'x'.repeat(300_000);
    const proc = await run(t, `v='${long}'; echo \${#v}`);
    expect(started().at(-1)?.spare).toBe(true);
    expect(text(proc, 'stdout')).toBe('300000\n');
  });

  it('discards spares killed meanwhile, and the start spawns', async () => {
    const t = table({});
    await run(t, 'true');
    await spares(t);
    const pids = await childrenMatching('__sbx_script');
    expect(pids.length).toBeGreaterThanOrEqual(2);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await eventually('the spares gone', () => Promise.resolve(t.spareCount === 0));
    const proc = await run(t, 'echo fine');
    expect(started().at(-1)?.spare).toBe(false);
    expect(text(proc, 'stdout')).toBe('fine\n');
  });

  it('discards spares started before the session env changed (a warm Pod bind)', async () => {
    const sessionEnv: Record<string, string> = {};
    const t = table(sessionEnv);
    await run(t, 'true');
    await spares(t);
    sessionEnv.BOUND = 'yes';
    const proc = await run(t, 'echo "[$BOUND]"');
    expect(started().at(-1)?.spare).toBe(false);
    expect(text(proc, 'stdout')).toBe('[yes]\n');
  });

  it('kills its spares when it closes', async () => {
    const t = table({});
    await run(t, 'true');
    await spares(t);
    expect((await childrenMatching('__sbx_script')).length).toBeGreaterThanOrEqual(2);
    await t.close();
    await eventually('no spare left', async () => (await childrenMatching('__sbx_script')).length === 0);
  });

  it('runs nothing when its script was cut (no end line: the agent went away while writing it)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'spare-'));
    try {
      const spare = await SpareBash.start({
        bashPath: 'bash',
        workspace: dir,
        env: { PATH: process.env.PATH },
        logger: createLogger('silent'),
      });
      const exit = new Promise<number | null>((resolve) => spare.child.once('exit', resolve));
      (spare.child.stdio[3] as NodeJS.WritableStream).end(`touch ${join(dir, 'ran')}\n`);
      expect(await exit).toBe(125);
      await expect(stat(join(dir, 'ran'))).rejects.toMatchObject({ code: 'ENOENT' });
      spare.discard();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
