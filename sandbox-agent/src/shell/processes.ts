/**
 * Finding and killing a command's processes through /proc (Linux only, which is where pods run).
 *
 * A command runs inside the long-lived bash, so "the command's processes" are: processes started
 * since the command began that are in bash's session (bash is a session leader; children,
 * grandchildren and orphans reparented away from bash keep its session unless they call setsid)
 * or that still descend from bash. Background jobs of earlier commands started before and
 * survive. With job control on, each job has its own process group, killed as a whole (atomic
 * against forks) when its leader is one of the command's processes; other processes are killed
 * one by one. A few rounds catch processes forked while the previous round was killing.
 *
 * Start times are in 10 ms clock ticks, so a background job started by the previous command a
 * few milliseconds before this one began has the same tick as this command's own processes. For
 * processes in that ambiguous window the PID decides: a process whose PID was allocated after
 * the last PID at the command's start (read from /proc/loadavg, which the kernel keeps per PID
 * namespace) is the command's.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

/** The /proc/<pid>/stat fields the kill logic needs. */
export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  state: string;
  /** Start time in clock ticks since boot. */
  startTicks: number;
}

/** USER_HZ: /proc times are in 1/100 s on every Linux architecture Kubernetes runs on. */
const CLOCK_TICKS_PER_SECOND = 100;
const KILL_ROUNDS = 20;
const ROUND_PAUSE_MS = 25;

/** Parses /proc/<pid>/stat; the command name may contain spaces and parentheses, so split after the last `)`. */
export function parseStat(text: string): ProcInfo | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const rest = text.slice(close + 2).split(' ');
  const num = (i: number): number => Number.parseInt(rest[i] ?? '', 10);
  const info = {
    pid: Number.parseInt(text.slice(0, open), 10),
    state: rest[0] ?? '?',
    ppid: num(1),
    pgid: num(2),
    sid: num(3),
    startTicks: num(19),
  };
  return Number.isFinite(info.pid) && Number.isFinite(info.startTicks) ? info : undefined;
}

/** Every process visible in /proc (those that exit mid-scan are skipped). */
export async function listProcesses(): Promise<ProcInfo[]> {
  const entries = await readdir('/proc');
  const stats = await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map((pid) => readFile(`/proc/${pid}/stat`, 'utf8').then(parseStat, ignoreVanished)),
  );
  return stats.filter((s): s is ProcInfo => s !== undefined);
}

function ignoreVanished(err: unknown): undefined {
  // The process exited between readdir and readFile: it is gone, which is what we want anyway.
  if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ESRCH') {
    return undefined;
  }
  throw err;
}

/**
 * The clock-tick time (as in ProcInfo.startTicks) of an instant `agoMs` milliseconds in the past.
 * /proc/uptime is read synchronously, at the same instant as the caller measured `agoMs`: an
 * asynchronous read finished only once a thread of libuv's pool was free (busy with /proc reads
 * and file calls, each slow under gVisor), and the instant came out later by that wait: the sweep
 * took the processes the command started first (its job leaders) for older ones, left them
 * alive, and after killGraceMs restarted bash instead.
 */
export function ticksAgo(agoMs: number): number {
  const uptime = Number.parseFloat(readHeldProcFile('/proc/uptime').split(' ')[0] ?? '');
  if (!Number.isFinite(uptime)) throw new Error('cannot parse /proc/uptime');
  return Math.floor((uptime - agoMs / 1000) * CLOCK_TICKS_PER_SECOND);
}

/** Ticks after `sinceTicks` within which a start time alone cannot tell before from after. */
const AMBIGUOUS_TICKS = 3;

/** Where a command began: its start tick (one tick early) and, when known, the last PID then. */
export interface CommandStart {
  sinceTicks: number;
  /** The last PID allocated before the command began (see {@link lastPid}). */
  afterPid?: number;
  /** /proc/sys/kernel/pid_max, for PID wrap-around. */
  pidMax?: number;
}

/** Bytes read of a held /proc file: one short line (/proc/loadavg, /proc/uptime: under 64 bytes). */
const HELD_PROC_READ_BYTES = 256;

/** Descriptors of the /proc files read by {@link readHeldProcFile}, by path. */
const heldProcFiles = new Map<string, number>();
const heldProcBuffer = Buffer.alloc(HELD_PROC_READ_BYTES);

/**
 * The current text of a small /proc file (its first {@link HELD_PROC_READ_BYTES} bytes), read
 * with one pread(2) at offset 0 on a descriptor opened once and held (close-on-exec, as every
 * descriptor Node opens), instead of open, read, read and close per call: lastPid runs for every
 * command, on the path from the request to bash, and under gVisor each syscall is a Sentry round
 * trip. A read at offset 0 regenerates the text in Linux (seq_file) and in gVisor's Sentry
 * (DynamicBytesFileDescriptionImpl), so it is as fresh as a new open's. A failed read closes the
 * descriptor, and the next call opens the file anew.
 */
export function readHeldProcFile(path: string): string {
  let fd = heldProcFiles.get(path);
  if (fd === undefined) {
    fd = openSync(path, 'r');
    heldProcFiles.set(path, fd);
  }
  try {
    const n = readSync(fd, heldProcBuffer, 0, heldProcBuffer.length, 0);
    return heldProcBuffer.toString('utf8', 0, n);
  } catch (err) {
    heldProcFiles.delete(path);
    closeSync(fd);
    throw err;
  }
}

/** The most recently allocated PID of this PID namespace (5th field of /proc/loadavg). */
export function lastPid(read: (path: string) => string = readHeldProcFile): number | undefined {
  try {
    const pid = Number.parseInt(read('/proc/loadavg').trim().split(' ')[4] ?? '', 10);
    return Number.isFinite(pid) ? pid : undefined;
  } catch {
    return undefined; // not Linux: start times alone decide
  }
}

/** True when `pid` was allocated after `afterPid`, allowing for wrap-around at pid_max. */
export function pidAfter(pid: number, afterPid: number, pidMax: number): boolean {
  const distance = (pid - afterPid + pidMax) % pidMax;
  return distance > 0 && distance < pidMax / 2;
}

function startedSince(p: ProcInfo, start: CommandStart): boolean {
  if (p.startTicks < start.sinceTicks) return false;
  if (p.startTicks >= start.sinceTicks + AMBIGUOUS_TICKS || start.afterPid === undefined) return true;
  return pidAfter(p.pid, start.afterPid, start.pidMax ?? DEFAULT_PID_MAX);
}

/** Linux's default pid_max on 64-bit systems. */
const DEFAULT_PID_MAX = 4_194_304;

/**
 * The processes of the command running in `shellPid` (see the module comment). Zombies are
 * excluded: they are already dead and only wait to be reaped.
 */
export function commandProcesses(
  procs: readonly ProcInfo[],
  shellPid: number,
  start: CommandStart,
): ProcInfo[] {
  const descendants = descendantsOf(procs, shellPid);
  return procs.filter(
    (p) =>
      p.pid !== shellPid &&
      startedSince(p, start) &&
      p.state !== 'Z' &&
      p.state !== 'X' &&
      (p.sid === shellPid || descendants.has(p.pid)),
  );
}

function descendantsOf(procs: readonly ProcInfo[], root: number): Set<number> {
  const children = new Map<number, number[]>();
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const found = new Set<number>();
  const stack = [...(children.get(root) ?? [])];
  for (let pid = stack.pop(); pid !== undefined; pid = stack.pop()) {
    if (found.has(pid)) continue;
    found.add(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return found;
}

/**
 * What to signal: `-pgid` for a process group whose leader is itself a target (a job of this
 * command), else the single pid. The shell's own group is never signalled as a group.
 */
export function killTargets(targets: readonly ProcInfo[], shellPid: number): number[] {
  const pids = new Set(targets.map((t) => t.pid));
  const out = new Set<number>();
  for (const t of targets) {
    const ownJob = t.pgid !== shellPid && pids.has(t.pgid);
    out.add(ownJob ? -t.pgid : t.pid);
  }
  return [...out];
}

/** Sends a signal; false when the target no longer exists. */
export function sendSignal(target: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(target, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/** /proc/sys/kernel/pid_max, or the 64-bit default when unreadable. */
function pidMax(): number {
  try {
    const value = Number.parseInt(readFileSync('/proc/sys/kernel/pid_max', 'utf8'), 10);
    return Number.isFinite(value) && value > 0 ? value : DEFAULT_PID_MAX;
  } catch {
    return DEFAULT_PID_MAX;
  }
}

/**
 * SIGKILLs the processes of the command running in `shellPid` that started `runningForMs` ago
 * (`afterPid`: the last PID when it started), in rounds until none is left; bash itself is never
 * signalled. Returns the number of signals sent.
 */
export async function killCommandProcesses(
  shellPid: number,
  runningForMs: number,
  afterPid?: number,
): Promise<number> {
  // One tick of margin: start times are truncated to ticks.
  const start: CommandStart = { sinceTicks: ticksAgo(runningForMs) - 1, afterPid, pidMax: pidMax() };
  let sent = 0;
  for (let round = 0; round < KILL_ROUNDS; round++) {
    const targets = commandProcesses(await listProcesses(), shellPid, start);
    if (targets.length === 0) return sent;
    for (const target of killTargets(targets, shellPid)) if (sendSignal(target, 'SIGKILL')) sent++;
    await pause(ROUND_PAUSE_MS);
  }
  return sent;
}

/** SIGKILLs every process left in a session whose leader (a dead bash) is gone. */
export async function killSession(sid: number): Promise<number> {
  let sent = 0;
  for (let round = 0; round < KILL_ROUNDS; round++) {
    const members = (await listProcesses()).filter(
      (p) => p.sid === sid && p.state !== 'Z' && p.state !== 'X',
    );
    if (members.length === 0) return sent;
    for (const p of members) if (sendSignal(p.pid, 'SIGKILL')) sent++;
    await pause(ROUND_PAUSE_MS);
  }
  return sent;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * SIGKILLs what is left of a process group whose leader has exited and been reaped: the members
 * of group `pgid` that started no later than `beforeTicks` (the leader's exit). Once every member
 * is gone the number can be reused by an unrelated group (after a PID wrap-around), so the group
 * is never signalled as a whole here. Returns the number of signals sent.
 */
export async function killGroupLeftovers(pgid: number, beforeTicks: number): Promise<number> {
  let sent = 0;
  for (const p of await listProcesses()) {
    if (p.pgid === pgid && p.startTicks <= beforeTicks && p.state !== 'Z' && p.state !== 'X') {
      if (sendSignal(p.pid, 'SIGKILL')) sent++;
    }
  }
  return sent;
}
