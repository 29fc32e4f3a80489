/**
 * The session's env (spec.env) reaches the user's bash and what it starts, never the agent: it
 * arrives as SANDBOX_ENV_<name> and is exported after bash's own start. Variables that steer
 * processes (NODE_OPTIONS, LD_PRELOAD, BASH_ENV) must neither break nor steer the agent.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { sessionEnvFrom } from '../../src/config.js';
import { sessionEnvInit } from '../../src/shell/wrapper.js';
import { TestAgent } from './helpers/test-agent.js';

describe('session env', () => {
  let agent: TestAgent;
  let dir: string;
  let bashEnv: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sbx-env-'));
    bashEnv = join(dir, 'bash-env.sh');
    // Sourced by the agent's bash at its start, this would eat the protocol from stdin, close
    // fd 3 and print on stdout: the agent could not start.
    await writeFile(bashEnv, 'read -r stolen; exec 3>&-; echo "BASH_ENV ran" >&2; echo garbage\n');
    agent = await TestAgent.start({
      sessionEnv: {
        NODE_OPTIONS: '--require /nonexistent',
        LD_PRELOAD: '/nonexistent.so',
        BASH_ENV: bashEnv,
        GREETING: 'it\'s a "quoted" $value `x`\nsecond line',
        EUID: '0',
      },
    });
  });
  afterAll(async () => {
    await agent.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('starts and runs commands although the env would break node and bash if they received it', async () => {
    expect((await agent.send({ method: 'GET', path: '/healthz' }, false)).status).toBe(200);
    expect(await agent.exec({ command: 'echo ok' })).toMatchObject({ stdout: 'ok\n', exitCode: 0 });
  });

  it('shows the user values in the shell, exported', async () => {
    const res = await agent.exec({
      command: 'echo "$NODE_OPTIONS|$LD_PRELOAD|$BASH_ENV"; printenv GREETING; declare -p NODE_OPTIONS',
    });
    expect(res.stdout).toBe(
      [
        `--require /nonexistent|/nonexistent.so|${bashEnv}`,
        'it\'s a "quoted" $value `x`',
        'second line',
        'declare -x NODE_OPTIONS="--require /nonexistent"',
        '',
      ].join('\n'),
    );
  });

  it('reaches the processes commands start (BASH_ENV runs in a child bash, not in the agent shell)', async () => {
    const res = await agent.exec({ command: 'bash -c "echo child" </dev/null 2>&1 | grep -v ld.so' });
    expect(res.stdout).toBe('BASH_ENV ran\ngarbage\nchild\n');
  });

  it('keeps the carriers and the agent settings out of the shell', async () => {
    const res = await agent.exec({ command: 'env | grep -c "^SANDBOX_" || true' });
    expect(res.stdout).toBe('0\n');
  });

  it('leaves a readonly name (EUID) as bash has it, without breaking the shell', async () => {
    expect(await agent.sh('echo $EUID')).toBe(`${process.geteuid?.() ?? ''}\n`);
  });

  it('is applied again in a restarted bash, and a per-call env still wins for its call', async () => {
    expect((await agent.exec({ command: 'exit 3' })).exitCode).toBe(3);
    const res = await agent.exec({ command: 'echo "$NODE_OPTIONS"', env: { NODE_OPTIONS: 'per-call' } });
    expect(res).toMatchObject({ stdout: 'per-call\n', shellReset: true });
    expect(await agent.sh('echo "$NODE_OPTIONS"')).toBe('--require /nonexistent\n');
  });

  it('does not leak into the agent process itself', () => {
    expect(process.env.NODE_OPTIONS).not.toBe('--require /nonexistent');
    expect(process.env.LD_PRELOAD).toBeUndefined();
  });
});

describe('sessionEnvFrom / sessionEnvInit', () => {
  it('takes exactly the SANDBOX_ENV_ variables, under their own names', () => {
    expect(
      sessionEnvFrom({
        SANDBOX_ENV_NODE_OPTIONS: 'x',
        SANDBOX_ENV_HOME: '/h',
        NODE_OPTIONS: 'agent',
        SANDBOX_TOKEN: 't',
        SANDBOX_AGENT_PORT: '1',
      }),
    ).toEqual({ NODE_OPTIONS: 'x', HOME: '/h' });
  });

  it('exports each name from its carrier, and refuses names that are not identifiers', () => {
    expect(sessionEnvInit(['A_1'])).toBe(
      'command export A_1="$SANDBOX_ENV_A_1" 2>/dev/null; builtin unset SANDBOX_ENV_A_1\n',
    );
    expect(() => sessionEnvInit(['A;rm -rf /'])).toThrow(/invalid variable name/);
  });
});
