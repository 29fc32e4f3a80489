/** Selecting a command's processes from /proc data (pure), and parsing /proc/<pid>/stat. */
import { describe, expect, it } from '@jest/globals';

import {
  commandProcesses,
  killTargets,
  listProcesses,
  parseStat,
  type ProcInfo,
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
    const pids = commandProcesses(procs, SHELL, 40).map((p) => p.pid);
    expect(pids.sort()).toEqual([201, 202, 203, 204, 205]);
  });

  it('signals whole groups only when their leader is one of the targets', () => {
    const targets = commandProcesses(procs, SHELL, 40);
    expect(killTargets(targets, SHELL).sort((a, b) => a - b)).toEqual([-205, -203, -201, 204]);
  });
});
