/**
 * e2e (issue 28): the official Python e2b SDK (PyPI e2b 2.63.0, unmodified, in .cache/venv-e2b made
 * by python/venv.sh) against the in-cluster gateway: python/check_sdk.py does what the JS spec
 * does (create, commands, background kill, stdin, files with a binary one, watch, PTY, timeout,
 * pause/connect with files kept, the other key refused, bad input, kill) and prints a line per
 * step; this spec runs it and checks every step passed.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from '@jest/globals';

import { API_URL, KEY, OTHER_KEY, SANDBOX_URL } from './support.js';

const here = import.meta.dirname;
const run = promisify(execFile);

const STEPS = [
  'create',
  'commands.run',
  'background command killed',
  'stdin',
  'files',
  'watch',
  'pty',
  'pause and connect',
  'other key refused',
  'bad input',
  'kill',
];

describe('the official Python e2b SDK against the gateway', () => {
  it('passes every step of check_sdk.py', async () => {
    const python = (await run(join(here, 'python/venv.sh'), [], { timeout: 600_000 })).stdout.trim();
    const result = await run(python, [join(here, 'python/check_sdk.py')], {
      env: {
        ...process.env,
        E2B_API_URL: API_URL,
        E2B_SANDBOX_URL: SANDBOX_URL,
        E2B_API_KEY: KEY,
        E2B_OTHER_API_KEY: OTHER_KEY,
      },
      timeout: 600_000,
    }).catch((err: { stdout?: string; stderr?: string; message: string }) => err);
    const passed = (result.stdout ?? '')
      .split('\n')
      .filter((l) => l.startsWith('ok '))
      .map((l) => l.slice(3));
    if (passed.length !== STEPS.length) console.error(result.stdout, result.stderr);
    expect(passed).toEqual(STEPS);
  }, 900_000);
});
