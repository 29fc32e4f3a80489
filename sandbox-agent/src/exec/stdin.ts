/**
 * Where a command's stdin comes from: bytes of a JSON request (`stdin`), or the stdin lines of an
 * NDJSON stream request, read while the command runs. A feed only produces bytes; the shell owns
 * the pipe they go into (shell/stdin-pipe.ts) and closes it at EOF or when the command ends.
 */
import { STDIN_LINE_MAX_BYTES } from '@sandbox-platform/api';

import { LineTooLongError, type NdjsonLineReader } from '../http/ndjson-lines.js';
import { VALIDATORS, describeError } from '../http/validate.js';
import { decodeInput } from './encoding.js';

/**
 * Writes bytes into the command's stdin; resolves once the pipe accepted them (backpressure), and
 * rejects with {@link StdinClosedError} once the command has ended.
 */
export type StdinWrite = (chunk: Buffer) => Promise<void>;

/** A command's stdin. */
export interface StdinFeed {
  /** Bytes held in memory until the command runs (counted against the queue's stdin budget). */
  readonly heldBytes: number;
  /** Writes every byte, then resolves (EOF follows); rejects with {@link StdinError} on bad input. */
  pump(write: StdinWrite): Promise<void>;
}

/** The client sent stdin the agent cannot use (reported in the exit event; the command is stopped). */
export class StdinError extends Error {
  override readonly name = 'StdinError';
}

/** The command ended while stdin was still being written: the rest is not needed. */
export class StdinClosedError extends Error {
  override readonly name = 'StdinClosedError';
}

/** The `stdin` bytes of a JSON request. */
export function bufferedStdin(bytes: Buffer): StdinFeed {
  return {
    heldBytes: bytes.length,
    pump: async (write) => {
      if (bytes.length > 0) await write(bytes);
    },
  };
}

/**
 * The stdin lines of an NDJSON request (after its first line): `{"type":"stdin","data",
 * "encoding"?}` lines until `{"type":"close"}` or the end of the body. Lines are read one at a
 * time, each only after the previous one was accepted by the pipe.
 */
export function streamedStdin(lines: NdjsonLineReader): StdinFeed {
  return {
    heldBytes: 0,
    pump: async (write) => {
      for (;;) {
        const chunk = await nextStdinChunk(lines);
        if (chunk === undefined) return;
        if (chunk.length > 0) await write(chunk);
      }
    },
  };
}

/** The bytes of the next stdin line; undefined at the close line or the end of the body. */
async function nextStdinChunk(lines: NdjsonLineReader): Promise<Buffer | undefined> {
  let line: Buffer | undefined;
  try {
    line = await lines.next(STDIN_LINE_MAX_BYTES);
  } catch (err) {
    if (err instanceof LineTooLongError) throw new StdinError(err.message, { cause: err });
    throw err;
  }
  if (line === undefined) return undefined;
  const at = `line ${lines.lineNumber}`;
  let value: unknown;
  try {
    value = JSON.parse(line.toString('utf8')) as unknown;
  } catch (err) {
    throw new StdinError(`${at} is not valid JSON`, { cause: err });
  }
  if (VALIDATORS.stdinClose(value)) return undefined;
  if (!VALIDATORS.stdinChunk(value)) {
    throw new StdinError(`${at}: ${describeError(VALIDATORS.stdinChunk.errors?.[0], 'the line')}`);
  }
  const bytes = decodeInput(value.data, value.encoding);
  if (!bytes) throw new StdinError(`${at}: data is not valid base64`);
  return bytes;
}
