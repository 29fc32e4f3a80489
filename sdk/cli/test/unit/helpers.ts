/** In-memory process edges for running the CLI in a test. */
import { PassThrough, Readable } from 'node:stream';

import { run } from '../../src/cli.js';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with argv and env; stdin holds `input`. */
export async function sbx(
  argv: string[],
  env: Record<string, string | undefined> = {},
  input = '',
): Promise<RunResult> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await run({
    argv,
    env: { SANDBOX_CONFIG: '/nonexistent/sbx-config.yaml', ...env },
    stdin: Readable.from([input]),
    stdout,
    stderr,
    prog: 'sbx',
    signal: new AbortController().signal,
  });
  return { code, stdout: out, stderr: err };
}
