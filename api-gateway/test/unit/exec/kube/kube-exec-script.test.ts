/**
 * The KubernetesExec scripts run for real here, under the local sh, with a temporary directory as
 * the workspace: the same argv pods/exec would run in the container.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  EXIT_NOT_FOUND,
  EXIT_PATH_FORBIDDEN,
  execArgv,
  readFileArgv,
  writeFileArgv,
} from '../../../../src/exec/kube/kube-exec-script.js';

function run(argv: string[], input?: Buffer): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(argv[0]!, argv.slice(1), { input, encoding: 'utf8', timeout: 15_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('KubernetesExec scripts', () => {
  let ws: string;
  beforeAll(() => {
    ws = mkdtempSync(join(tmpdir(), 'gw-ws-'));
    mkdirSync(join(ws, 'sub'));
    symlinkSync('/etc', join(ws, 'escape'));
  });
  afterAll(() => rmSync(ws, { recursive: true, force: true }));

  it('runs in the workspace with bash, stdout, stderr and the exit code', () => {
    const r = run(
      execArgv(
        { command: 'pwd; echo "$BASH_VERSION" | cut -c1; echo err >&2; exit 3', timeoutSeconds: 5 },
        ws,
      ),
    );
    const [pwd, bashMajor] = r.stdout.trim().split('\n');
    expect(pwd).toBe(ws);
    expect(bashMajor).toMatch(/^[0-9]$/);
    expect([r.stderr, r.code]).toEqual(['err\n', 3]);
  });

  it('applies cwd (relative to the workspace) and env without shell injection', () => {
    const nasty = '$(touch pwned); `id`; "quoted" \'single\'';
    const r = run(
      execArgv({ command: 'pwd; printf %s "$V"', timeoutSeconds: 5, cwd: 'sub', env: { V: nasty } }, ws),
    );
    expect(r.stdout).toBe(`${join(ws, 'sub')}\n${nasty}`);
    expect(() => readFileSync(join(ws, 'sub', 'pwned'))).toThrow();
  });

  it('fails with exit 1 and a message for a missing cwd', () => {
    const r = run(execArgv({ command: 'true', timeoutSeconds: 5, cwd: 'nope' }, ws));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/nope/);
  });

  it('kills the command at the timeout with exit 124, like the agent', () => {
    // Cut by the timeout, not run to its end: 124 and no 'after' (run() kills at 15 s otherwise,
    // which gives no exit code).
    const r = run(execArgv({ command: 'echo before; sleep 30; echo after', timeoutSeconds: 1 }, ws));
    expect(r.code).toBe(124);
    expect(r.stdout).toBe('before\n');
  });

  it('writes stdin atomically into a new directory and prints the size', () => {
    const r = run(writeFileArgv('new/dir/f.bin', ws), Buffer.from([0, 1, 2, 3]));
    expect([r.code, r.stdout.trim()]).toEqual([0, '4']);
    expect([...readFileSync(join(ws, 'new/dir/f.bin'))]).toEqual([0, 1, 2, 3]);
  });

  it('reads a file to stdout, 91 for a missing one', () => {
    writeFileSync(join(ws, 'sub', 'r.txt'), 'content');
    expect(run(readFileArgv('sub/r.txt', ws))).toMatchObject({ code: 0, stdout: 'content' });
    expect(run(readFileArgv('sub/missing', ws)).code).toBe(EXIT_NOT_FOUND);
    expect(run(readFileArgv('sub', ws)).code).toBe(EXIT_NOT_FOUND);
  });

  it.each(['../outside', 'escape/passwd', 'escape', 'sub/../../x'])('refuses %s with exit 90', (path) => {
    expect(run(readFileArgv(path, ws)).code).toBe(EXIT_PATH_FORBIDDEN);
    expect(run(writeFileArgv(path, ws), Buffer.from('x')).code).toBe(EXIT_PATH_FORBIDDEN);
  });

  it('reads an absolute path inside the workspace, never from the root', () => {
    expect(run(readFileArgv('/etc/passwd', ws)).code).toBe(EXIT_NOT_FOUND);
  });
});
