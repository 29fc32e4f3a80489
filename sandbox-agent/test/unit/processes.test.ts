/**
 * Selecting a command's processes from /proc data (pure), parsing /proc/<pid>/stat, reading /proc
 * files, killing a command's processes.
 */
import { describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  commandProcesses,
  killCommandProcesses,
  killTargets,
  lastPid,
  listProcesses,
  parseStat,
  pidAfter,
  type ProcInfo,
  readHeldProcFile,
  sendSignal,
} from '../../src/shell/processes.js';

const SHELL = 100;

function proc(
  pid: number,
  ppid: number,
  pgid: number,
  startTicks: number,
  extra: Partial<ProcInfo> = {},
): ProcInfo {
  return { pid, ppid, pgid, sid: SHELL, state: 'S', startTicks, ...extra };
}

describe('parseStat', () => {
  it('parses a command name with spaces and parentheses', () => {
    const line = '4242 (my (odd) name) S 1 4240 4200 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 0 0';
    expect(parseStat(line)).toEqual({
      pid: 4242,
      state: 'S',
      ppid: 1,
      pgid: 4240,
      sid: 4200,
      startTicks: 987654,
    });
  });

  it('parses this process from /proc', async () => {
    const me = (await listProcesses()).find((p) => p.pid === process.pid);
    expect(me).toMatchObject({ pid: process.pid, ppid: process.ppid });
  });
});

describe('commandProcesses', () => {
  const procs = [
    proc(SHELL, 1, SHELL, 10),
    proc(201, SHELL, 201, 50), // a job of the command
    proc(202, 201, 201, 51), // its child
    proc(203, 1, 203, 52), // orphaned job leader reparented to init, still in the session
    proc(150, SHELL, 150, 20), // a background job of an earlier command
    proc(204, 150, 150, 60), // started now by that earlier job
    proc(205, 202, 205, 61, { sid: 205 }), // setsid'd grandchild still under the tree
    proc(300, 1, 300, 70, { sid: 300 }), // unrelated
    proc(206, SHELL, 206, 55, { state: 'Z' }), // zombie
  ];

  it('selects new processes of the shell session or tree, never the shell, old jobs or zombies', () => {
    const pids = commandProcesses(procs, SHELL, { sinceTicks: 40 }).map((p) => p.pid);
    expect(pids.sort()).toEqual([201, 202, 203, 204, 205]);
  });

  it('signals whole groups only when their leader is one of the targets', () => {
    const targets = commandProcesses(procs, SHELL, { sinceTicks: 40 });
    expect(killTargets(targets, SHELL).sort((a, b) => a - b)).toEqual([-205, -203, -201, 204]);
  });
});

describe('commandProcesses in the ambiguous first ticks', () => {
  // The command began at tick 40 (sinceTicks 39, one tick early) when the last PID was 500.
  const start = { sinceTicks: 39, afterPid: 500, pidMax: 32768 };
  const procs = [
    proc(SHELL, 1, SHELL, 10),
    proc(480, SHELL, 480, 40), // background job of the previous command, same tick as the command
    proc(510, SHELL, 510, 40), // the command's own job, same tick
    proc(470, SHELL, 470, 45), // clearly later start time: the command's (a reused low PID)
  ];

  it('lets the PID decide within the ambiguous window and the start time after it', () => {
    const pids = commandProcesses(procs, SHELL, start).map((p) => p.pid);
    expect(pids.sort()).toEqual([470, 510]);
  });

  it('falls back to start times alone without a start PID', () => {
    const pids = commandProcesses(procs, SHELL, { sinceTicks: 39 }).map((p) => p.pid);
    expect(pids.sort()).toEqual([470, 480, 510]);
  });
});

describe('pidAfter', () => {
  it('orders PIDs and survives wrap-around at pid_max', () => {
    expect(pidAfter(501, 500, 32768)).toBe(true);
    expect(pidAfter(499, 500, 32768)).toBe(false);
    expect(pidAfter(500, 500, 32768)).toBe(false);
    expect(pidAfter(300, 32700, 32768)).toBe(true); // allocated after the wrap
    expect(pidAfter(32700, 300, 32768)).toBe(false);
  });
});

describe('lastPid', () => {
  it('reads the last allocated PID from /proc/loadavg', () => {
    expect(lastPid(() => '0.52 0.58 0.59 2/467 12345\n')).toBe(12345);
    expect(lastPid(() => 'garbage')).toBeUndefined();
    expect(
      lastPid(() => {
        throw new Error('ENOENT');
      }),
    ).toBeUndefined();
  });

  it('grows when this host forks', () => {
    const before = lastPid();
    expect(before).toBeDefined();
    execFileSync('true');
    expect(pidAfter(lastPid()!, before!, 4_194_304)).toBe(true);
  });
});

describe('readHeldProcFile', () => {
  it('reads a file again from its start on each call, seeing what changed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'held-'));
    const file = join(dir, 'f');
    try {
      writeFileSync(file, 'one 1\n');
      expect(readHeldProcFile(file)).toBe('one 1\n');
      writeFileSync(file, 'two 22\n'); // same inode, rewritten
      expect(readHeldProcFile(file)).toBe('two 22\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('throws for a file it cannot open, and opens it once it exists', () => {
    const dir = mkdtempSync(join(tmpdir(), 'held-'));
    const file = join(dir, 'late');
    try {
      expect(() => readHeldProcFile(file)).toThrow(/ENOENT/);
      writeFileSync(file, 'here\n');
      expect(readHeldProcFile(file)).toBe('here\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives a fresh /proc/loadavg at every read of the held descriptor', () => {
    const pids = [lastPid()];
    for (let i = 0; i < 3; i++) {
      execFileSync('true');
      pids.push(lastPid());
    }
    for (let i = 1; i < pids.length; i++) expect(pidAfter(pids[i]!, pids[i - 1]!, 4_194_304)).toBe(true);
  });
});

describe("killCommandProcesses while libuv's thread pool is busy", () => {
  /**
   * Opens of FIFOs without a writer: each holds one thread of the pool in open(2) until
   * `release` opens the FIFOs read-write (which never blocks on Linux and counts as a writer).
   * More than the pool's size, so every thread is held (the rest wait in its queue).
   */
  function holdThreadPool(): { release: () => Promise<void> } {
    const dir = mkdtempSync(join(tmpdir(), 'pool-'));
    const count = (Number(process.env.UV_THREADPOOL_SIZE) || 4) + 2;
    const fifos = Array.from({ length: count }, (_, i) => join(dir, `f${i}`));
    for (const fifo of fifos) execFileSync('mkfifo', [fifo]);
    const held = fifos.map((fifo) => open(fifo, 'r'));
    return {
      async release() {
        const writers = fifos.map((fifo) => openSync(fifo, 'r+'));
        for (const handle of await Promise.all(held)) await handle.close();
        for (const fd of writers) closeSync(fd);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }

  it('kills the processes a command started first, though /proc reads wait for the pool', async () => {
    const afterPid = lastPid();
    const startedAt = performance.now();
    // A shell in its own session, as the persistent bash, whose command started a sleep.
    const shell = spawn('bash', ['-c', 'sleep 30 & wait'], { detached: true, stdio: 'ignore' });
    const shellPid = shell.pid!;
    const exited = new Promise((resolve) => shell.once('exit', resolve));
    try {
      let sleepPid: number | undefined;
      while (sleepPid === undefined) {
        sleepPid = (await listProcesses()).find((p) => p.ppid === shellPid)?.pid;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const pool = holdThreadPool();
      const killing = killCommandProcesses(shellPid, performance.now() - startedAt, afterPid);
      // Long enough for a start instant taken after this wait to pass the sleep's start tick.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await pool.release();
      expect(await killing).toBeGreaterThan(0);
      expect((await listProcesses()).some((p) => p.pid === sleepPid && p.state !== 'Z')).toBe(false);
    } finally {
      sendSignal(-shellPid, 'SIGKILL');
      await exited;
    }
  });
});
