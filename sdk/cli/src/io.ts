/**
 * What the CLI touches outside itself, passed in by the composition root (main.ts) so commands
 * are testable with in-memory streams and a fake environment.
 */
import type { Readable, Writable } from 'node:stream';

import type { SandboxClient } from '@sandbox-platform/client';

import type { Settings } from './config.js';

/** Process edges. */
export interface Io {
  /** Arguments after the program name. */
  argv: string[];
  env: Record<string, string | undefined>;
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
  /** How the user called us: `sbx` or `kubectl sandbox` (for usage lines). */
  prog: string;
  /** Aborted on Ctrl-C: a running exec or wait stops. */
  signal: AbortSignal;
}

/** What a command gets: its parsed input, the resolved settings and a client factory. */
export interface Context {
  io: Io;
  settings: Settings;
  /** Positionals after the command name (before `--`). */
  args: string[];
  /** Arguments after `--` (exec's command). */
  rest: string[];
  /** The command's own flags. */
  flags: Record<string, string | boolean | (string | boolean)[] | undefined>;
  /** The gateway client (fails with a clear UsageError when URL or key is missing). */
  client(): SandboxClient;
}

/** Writes a chunk and waits for the stream to drain when its buffer is full (bounded memory). */
export async function write(out: Writable, chunk: string | Uint8Array): Promise<void> {
  if (out.write(chunk)) return;
  await new Promise<void>((resolve, reject) => {
    const onDrain = (): void => {
      out.off('error', onError);
      resolve();
    };
    const onError = (err: Error): void => {
      out.off('drain', onDrain);
      reject(err);
    };
    out.once('drain', onDrain);
    out.once('error', onError);
  });
}
