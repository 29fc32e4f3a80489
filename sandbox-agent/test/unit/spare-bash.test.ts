/**
 * The process table's spare bash (SpareBash): after a start, the next start is handed a bash
 * started ahead, which runs the process exactly as a spawned one would; a spare is not used once
 * the session env changed, and goes with the table.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createLogger } from '../../src/log.js';
import type { ManagedProcess } from '../../src/processes/managed-process.js';
import { ProcessTable } from '../../src/processes/process-table.js';
import { eventually, processesMatching } from './helpers/test-agent.js';

/** What a process can tell of itself: $0, leftovers of the hand-over, its fds, env, cwd, stdin. */
const SELF =
  'echo "$0|${__sbx_go-none}|$(ls /proc/$$/fd | sort -n | tr "\\n" " ")|$SESSION_VAR|$OWN|$(pwd)|$(cat | wc -c)"; ' +
  'echo $(ps -o pgid=,sid= -p $$)';

// Forks under a loaded machine: generous bounds.
jest.setTimeout(60_000);

describe('spare bash', () => {
  let dir: string;
  let table: ProcessTable;
  let sessionEnv: Record<string, string>;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'spare-test-'));
    sessionEnv = { SESSION_VAR: 'one' };
    table = new ProcessTable({
      bashPath: 'bash',
      workspace: dir,
      env: { PATH: process.env.PATH },
      sessionEnv,
      maxProcesses: 8,
      outputBytes: 4096,
      logger: createLogger('silent'),
      tempDir: dir,
    });
  });
  afterEach(async () => {
    await table.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The pid of the table's spare, once there is one. */
  async function sparePid(): Promise<number> {
    let pids: number[] = [];
    await eventually('a spare bash', async () => (pids = await processesMatching(dir)).length === 1, 20_000);
    return pids[0]!;
  }

  async function run(command: string, extra: { cwd?: string; env?: Record<string, string> } = {}) {
    const proc = await table.start({ command, ...extra });
    await table.wait(proc.id, 10_000);
    return { proc, out: stdout(proc), info: proc.info() };
  }

  function stdout(proc: ManagedProcess): string {
    return proc.output.stdout.read(0, 1 << 20).bytes.toString();
  }

  it('hands the next start a bash started ahead, which runs it as a spawned bash does', async () => {
    const first = await run(SELF, { env: { OWN: 'own' } });
    const spare = await sparePid();
    expect(first.proc.pid).not.toBe(spare);
    const second = await run(SELF, { env: { OWN: 'own' } });
    expect(second.proc.pid).toBe(spare);
    // Same $0, no hand-over variable, same fds, env, cwd and stdin, its own process group and
    // session: the same text but for the pid.
    expect(first.out).toMatch(
      new RegExp(`^bash\\|none\\|0 1 2 .*\\|one\\|own\\|${dir}\\|0\n${first.proc.pid} ${first.proc.pid}\n$`),
    );
    expect(second.out.replaceAll(String(second.proc.pid), 'PID')).toBe(
      first.out.replaceAll(String(first.proc.pid), 'PID'),
    );
    expect(second.info).toMatchObject({ state: 'exited', exitCode: 0, command: SELF });
    // Its script file goes with it.
    await eventually('the script file removed', async () => (await scriptFiles()).length <= 1);
  });

  it('reports the exit code and signal of a process run by a spare', async () => {
    await run('true');
    const spare = await sparePid();
    const failed = await run('exit 7');
    expect(failed.proc.pid).toBe(spare);
    expect(failed.info).toMatchObject({ exitCode: 7 });
    const next = await sparePid();
    const proc = await table.start({ command: 'sleep 30' });
    expect(proc.pid).toBe(next);
    table.signal(proc.id, 'SIGKILL');
    expect(await table.wait(proc.id, 10_000)).toMatchObject({
      state: 'exited',
      exitCode: 137,
      signal: 'SIGKILL',
    });
  });

  it('does not use a spare started before the session env changed (a bind)', async () => {
    await run('true');
    const spare = await sparePid();
    sessionEnv.SESSION_VAR = 'two';
    const after = await run('echo "$SESSION_VAR"');
    expect(after.proc.pid).not.toBe(spare);
    expect(after.out).toBe('two\n');
    await eventually('the stale spare gone', async () => !(await processesMatching(dir)).includes(spare));
  });

  it('stops the spare and removes its directory when the table closes', async () => {
    await run('true');
    const spare = await sparePid();
    await table.close();
    await eventually('the spare gone', async () => !(await processesMatching(dir)).includes(spare));
    expect(await scriptFiles()).toEqual([]);
  });

  async function scriptFiles(): Promise<string[]> {
    const spareDirs = (await readdir(dir)).filter((d) => d.startsWith('agent-spare-'));
    const files = await Promise.all(spareDirs.map((d) => readdir(join(dir, d))));
    return files.flat();
  }
});
