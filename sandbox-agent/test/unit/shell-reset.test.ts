/** When bash dies it is restarted at once, and the next command is told its state was reset. */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, symlink, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { eventually, TestAgent } from './helpers/test-agent.js';

// Each test restarts bash (and waits for the agent to see it): under a load average of 30 on a
// 2-CPU machine three of them ran past the default 10 s and failed make test-unit.
jest.setTimeout(30_000);

describe('shell reset', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start();
  });
  afterAll(async () => {
    await agent.stop();
  });

  const healthy = async (): Promise<boolean> =>
    (await agent.send({ method: 'GET', path: '/healthz' }, false)).status === 200;

  it('respawns bash killed from outside and reports the reset once', async () => {
    await agent.sh('export LOST=yes; cd /tmp');
    const pid = Number((await agent.sh('echo $$')).trim());
    process.kill(pid, 'SIGKILL');
    await eventually('the old bash is gone and a new one answers', async () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return healthy();
      }
    });
    const next = await agent.exec({ command: 'echo "[$LOST] $(pwd) $$"' });
    expect(next.shellReset).toBe(true);
    expect(next.stdout).not.toContain(`${pid}`);
    expect(next.stdout).toMatch(new RegExp(`^\\[\\] ${agent.workspace} \\d+\\n$`));
    expect((await agent.exec({ command: 'true' })).shellReset).toBe(false);
  });

  it('reports the status of `exit N` and the reset on the following call', async () => {
    const exited = await agent.exec({ command: 'echo bye; exit 7' });
    expect(exited).toMatchObject({ stdout: 'bye\n', exitCode: 7, shellReset: false, timedOut: false });
    const next = await agent.exec({ command: 'echo back' });
    expect(next).toMatchObject({ stdout: 'back\n', shellReset: true });
  });

  it('reports the signal status when bash is killed while a command runs', async () => {
    const pid = bashPidFromLog(agent);
    const running = agent.exec({ command: 'echo started; sleep 30' });
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid, 'SIGKILL');
    const res = await running;
    expect(res).toMatchObject({ stdout: 'started\n', exitCode: 128 + 9, shellReset: false });
    expect((await agent.exec({ command: 'true' })).shellReset).toBe(true);
  });

  it('keeps `set -e` across calls without the framing tripping it, until a command fails', async () => {
    await agent.sh('set -e');
    expect(await agent.exec({ command: 'true', cwd: '/tmp' })).toMatchObject({
      exitCode: 0,
      shellReset: false,
    });
    expect(await agent.exec({ command: 'echo $-' })).toMatchObject({
      stdout: expect.stringContaining('e'),
      shellReset: false,
    });
    expect(await agent.exec({ command: 'false' })).toMatchObject({ exitCode: 1, shellReset: false });
    expect(await agent.exec({ command: 'echo $-' })).toMatchObject({
      stdout: expect.not.stringContaining('e'),
      shellReset: true,
    });
  });

  it('treats `exec` replacing the shell like an exit', async () => {
    const res = await agent.exec({ command: 'exec sh -c "echo replaced; exit 3"' });
    expect(res).toMatchObject({ stdout: 'replaced\n', exitCode: 3 });
    expect((await agent.exec({ command: 'true' })).shellReset).toBe(true);
  });
});

describe('shell restart that fails', () => {
  let dir: string;
  let link: string;
  let agent: TestAgent;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sbx-bash-'));
    link = join(dir, 'bash');
    await symlink(execFileSync('bash', ['-c', 'command -v bash']).toString().trim(), link);
    agent = await TestAgent.start({ bashPath: link }, { shell: { respawnRetryMs: 100 } });
  });
  afterAll(async () => {
    await agent.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const health = async (): Promise<number> =>
    (await agent.send({ method: 'GET', path: '/healthz' }, false)).status;

  it('is retried until bash starts again, without waiting for a command to ask', async () => {
    // Regression: one failed restart (e.g. no PID left during a fork bomb) left /healthz at 503
    // for good; the pod went unready, so no command ever came to try again.
    await unlink(link);
    process.kill(bashPidFromLog(agent), 'SIGKILL');
    await eventually('the restart fails', async () => (await health()) === 503);
    await eventually('the failure was logged', () =>
      Promise.resolve(agent.logs.some((l) => l.includes('"cannot restart the shell"'))),
    );
    await symlink(execFileSync('bash', ['-c', 'command -v bash']).toString().trim(), link);
    await eventually('bash is back', async () => (await health()) === 200);
    expect(await agent.exec({ command: 'echo back' })).toMatchObject({ stdout: 'back\n', shellReset: true });
  }, 20_000);
});

/** The current bash pid, from the agent's last "shell started" log line. */
function bashPidFromLog(agent: TestAgent): number {
  const started = agent.logs.filter((l) => l.includes('"shell started"')).at(-1);
  if (!started) throw new Error('no "shell started" log line');
  return (JSON.parse(started) as { pid: number }).pid;
}
