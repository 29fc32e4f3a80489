/** Selecting a command's processes from /proc data (pure), parsing /proc/<pid>/stat, reading /proc files. */
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  commandProcesses,
  killTargets,
  lastPid,
  listProcesses,
  parseStat,
  pidAfter,
  type ProcInfo,
  readHeldProcFile,
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
