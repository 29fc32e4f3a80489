/**
 * Composition root of `sbx` / `kubectl sandbox`: the only place that reads process state. The
 * bundle (scripts/bundle.mjs) puts `#!/usr/bin/env node` in front of it.
 */
import { basename } from 'node:path';

import { run } from './cli.js';
import { EXIT } from './errors.js';

/** Installed as kubectl-sandbox (kubectl's plugin mechanism), it presents itself as `kubectl sandbox`. */
const prog = basename(process.argv[1] ?? 'sbx').startsWith('kubectl-') ? 'kubectl sandbox' : 'sbx';

const interrupt = new AbortController();
process.once('SIGINT', () => interrupt.abort());
// `sbx get | head -1`: a closed pipe ends the run quietly, as other CLIs do.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
});

run({
  argv: process.argv.slice(2),
  env: process.env,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  prog,
  signal: interrupt.signal,
}).then(
  (code) => {
    process.exitCode = interrupt.signal.aborted ? EXIT.interrupted : code;
  },
  (err: unknown) => {
    // run() never throws; this is the last guard against a stack trace on the terminal.
    process.stderr.write(`${prog}: internal error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = EXIT.error;
  },
);
