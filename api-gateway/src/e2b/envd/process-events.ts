/**
 * From the agent's process follow (NDJSON output and exit lines, already validated by the follow
 * guard) to envd's ProcessEvent messages. Pure, apart from the async iteration helpers.
 */
import type { Readable } from 'node:stream';

import type { ExitEvent, ProcessInfo as AgentProcess, ProcessOutputEvent } from '@sandbox-platform/api';
import type { MessageInitShape } from '@bufbuild/protobuf';

import type { ProcessEventSchema, ProcessInfoSchema } from '../gen/process/process_pb.js';
import { parseMarker } from './launcher.js';

/** A ProcessEvent as the handlers yield it. */
export type ProcessEventInit = MessageInitShape<typeof ProcessEventSchema>;

/** Go's names of signals (envd reports exits in Go's ProcessState words). */
const GO_SIGNAL_NAMES: Record<string, string> = {
  SIGHUP: 'hangup',
  SIGINT: 'interrupt',
  SIGQUIT: 'quit',
  SIGKILL: 'killed',
  SIGTERM: 'terminated',
  SIGUSR1: 'user defined signal 1',
  SIGUSR2: 'user defined signal 2',
  SIGPIPE: 'broken pipe',
  SIGABRT: 'aborted',
  SIGSEGV: 'segmentation fault',
  SIGALRM: 'alarm clock',
  SIGSTOP: 'stopped (signal)',
};

/** The start event. */
export function startEvent(pid: number): ProcessEventInit {
  return { event: { case: 'start', value: { pid } } };
}

/** A keepalive event. */
export function keepaliveEvent(): ProcessEventInit {
  return { event: { case: 'keepalive', value: {} } };
}

/** The bytes an output line carries. */
export function outputData(line: ProcessOutputEvent): Buffer {
  return Buffer.from(line.data, line.encoding === 'base64' ? 'base64' : 'utf8');
}

/** How many bytes an output line carries. */
export function outputBytes(line: ProcessOutputEvent): number {
  return Buffer.byteLength(line.data, line.encoding === 'base64' ? 'base64' : 'utf8');
}

/**
 * An output line as a data event, or none: a terminal's output (stdout) is `pty` data; its stderr
 * is only the launcher's own (the PTY helper's is /dev/null), not the terminal's, and is dropped.
 */
export function dataEvent(line: ProcessOutputEvent, pty: boolean): ProcessEventInit | undefined {
  const bytes = outputData(line);
  if (pty)
    return line.type === 'stdout'
      ? { event: { case: 'data', value: { output: { case: 'pty', value: bytes } } } }
      : undefined;
  const output =
    line.type === 'stdout'
      ? { case: 'stdout' as const, value: bytes }
      : { case: 'stderr' as const, value: bytes };
  return { event: { case: 'data', value: { output } } };
}

/**
 * The end event, as envd words it: a normal exit is `exit status N` (with that as the error when N
 * is not 0); a signal is exit code -1 and `signal: <Go's name>`, exited false.
 */
export function endEvent(exit: Pick<ExitEvent, 'exitCode' | 'signal'>): ProcessEventInit {
  if (exit.signal !== undefined) {
    const status = `signal: ${GO_SIGNAL_NAMES[exit.signal] ?? exit.signal.toLowerCase()}`;
    return { event: { case: 'end', value: { exitCode: -1, exited: false, status, error: status } } };
  }
  const status = `exit status ${exit.exitCode}`;
  const value = { exitCode: exit.exitCode, exited: true, status };
  return { event: { case: 'end', value: exit.exitCode === 0 ? value : { ...value, error: status } } };
}

/** A followed line: output or the exit. */
export type FollowLine = ProcessOutputEvent | ExitEvent;

/** The lines of a follow stream (the guard writes one JSON object per line). */
export async function* followLines(stream: Readable): AsyncGenerator<FollowLine> {
  let rest = '';
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    rest += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    let nl = rest.indexOf('\n');
    while (nl >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      if (line.length > 0) yield JSON.parse(line) as FollowLine;
      nl = rest.indexOf('\n');
    }
  }
}

/** What withKeepalive yields when nothing came for its interval. */
export const TICK: unique symbol = Symbol('keepalive');

/**
 * The items of `source`, with TICK yielded whenever nothing came for `intervalMs` (envd's
 * keepalives: the SDKs ask for one every 50 s so idle streams survive proxies). 0: none.
 */
export async function* withKeepalive<T>(
  source: AsyncIterator<T>,
  intervalMs: number,
): AsyncGenerator<T | typeof TICK> {
  let pending: Promise<IteratorResult<T>> | undefined;
  try {
    for (;;) {
      pending ??= source.next();
      const next = intervalMs > 0 ? await raceTimer(pending, intervalMs) : await pending;
      if (next === 'tick') {
        yield TICK;
        continue;
      }
      pending = undefined;
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await source.return?.();
  }
}

function raceTimer<T>(p: Promise<T>, ms: number): Promise<T | 'tick'> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<'tick'>((resolve) => (timer = setTimeout(() => resolve('tick'), ms)));
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** envd's ProcessInfo of an agent process (E2B's config from its marker, else its bash command). */
export function listedProcess(p: AgentProcess): MessageInitShape<typeof ProcessInfoSchema> {
  const marker = parseMarker(p.command);
  const cwd = marker?.cwd ?? p.cwd;
  const config = {
    cmd: marker?.cmd ?? '/bin/bash',
    args: marker?.args ?? ['-c', p.command],
    envs: {},
    ...(cwd !== undefined ? { cwd } : {}),
  };
  return { config, pid: p.pid, ...(marker?.tag !== undefined ? { tag: marker.tag } : {}) };
}
