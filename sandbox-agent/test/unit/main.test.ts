/**
 * The entrypoint as the container runs it: main.ts bundled into one file by the image build's own
 * bundler (test-e2e/images/scripts/bundle.mjs, which also proves the bundle needs nothing but
 * Node), started as a process.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { promisify } from 'node:util';

import { eventually, processesMatching, uniqueSleepSeconds } from './helpers/test-agent.js';

const here = dirname(fileURLToPath(import.meta.url));
const token = randomBytes(32).toString('hex');
let dir: string;
let bundle: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sbx-main-'));
  bundle = join(dir, 'sandbox-agent.mjs');
  await promisify(execFile)(process.execPath, [
    join(here, '../../../test-e2e/images/scripts/bundle.mjs'),
    join(here, '../../src/main.ts'),
    bundle,
    'sandbox-agent',
  ]);
}, 30_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  port: number;
  output: () => string;
}

/** Runs the bundle with `env`; resolves once it logs that it listens. */
async function serve(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [bundle], { env: { PATH: process.env.PATH ?? '', ...env } });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  await eventually('the agent listens', () => Promise.resolve(output.includes('"agent listening"')), 10_000);
  const line = output.split('\n').find((l) => l.includes('"agent listening"')) ?? '';
  return { child, port: (JSON.parse(line) as { port: number }).port, output: () => output };
}

async function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [bundle, ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}

function execOver(port: number, command: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/exec',
        headers: { authorization: `Bearer ${token}` },
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(JSON.parse(body) as Record<string, unknown>));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ command }));
  });
}

describe('sandbox-agent entrypoint', () => {
  const baseEnv = (): Record<string, string> => ({
    SANDBOX_TOKEN: token,
    SANDBOX_WORKSPACE: dir,
    SANDBOX_AGENT_PORT: '0',
    SANDBOX_AGENT_HOST: '127.0.0.1',
  });

  it('fails fast with a clear message when the configuration is invalid', async () => {
    const res = await run([], { SANDBOX_WORKSPACE: dir, SANDBOX_AGENT_PORT: 'http' });
    expect(res.code).toBe(1);
    expect(res.output).toMatch(
      /invalid agent configuration: SANDBOX_AGENT_PORT must be a non-negative integer/,
    );
    expect(res.output).toMatch(/no token/);
  });

  it('fails fast when the workspace does not exist', async () => {
    const res = await run([], { ...baseEnv(), SANDBOX_WORKSPACE: join(dir, 'missing') });
    expect(res.code).toBe(1);
    expect(res.output).toMatch(/cannot start the agent: workspace .*missing is not usable/);
  });

  it('rejects an unknown subcommand', async () => {
    expect((await run(['frobnicate'], {})).code).toBe(2);
  });

  it('probe exits 0 against a ready agent and 1 when nothing listens', async () => {
    const agent = await serve(baseEnv());
    try {
      expect((await run(['probe'], { SANDBOX_AGENT_PORT: String(agent.port) })).code).toBe(0);
    } finally {
      agent.child.kill('SIGKILL');
      await once(agent.child, 'exit');
    }
    const down = await run(['probe'], { SANDBOX_AGENT_PORT: String(agent.port) });
    expect(down.code).toBe(1);
    expect(down.output).toMatch(/sandbox-agent probe: agent not ready/);
  }, 20_000);

  it('probe --live exits 0 against a live agent and 1 when nothing listens; other probe arguments are refused', async () => {
    const agent = await serve(baseEnv());
    try {
      expect((await run(['probe', '--live'], { SANDBOX_AGENT_PORT: String(agent.port) })).code).toBe(0);
      expect((await run(['probe', '--lively'], { SANDBOX_AGENT_PORT: String(agent.port) })).code).toBe(2);
    } finally {
      agent.child.kill('SIGKILL');
      await once(agent.child, 'exit');
    }
    const down = await run(['probe', '--live'], { SANDBOX_AGENT_PORT: String(agent.port) });
    expect(down.code).toBe(1);
    expect(down.output).toMatch(/sandbox-agent probe: agent not live/);
  }, 20_000);

  it('NODE_OPTIONS in its own environment steers node: the reason the session env never goes there', async () => {
    const res = await run(['probe'], { NODE_OPTIONS: '--require /nonexistent-sbx-module' });
    expect(res.code).not.toBe(0);
    expect(res.output).toMatch(/Cannot find module '\/nonexistent-sbx-module'/);
  });

  it('applies SANDBOX_ENV_* to the user shell only: node starts, the shell sees the values, the carriers are gone', async () => {
    const agent = await serve({
      ...baseEnv(),
      SANDBOX_ENV_NODE_OPTIONS: '--require /nonexistent-sbx-module',
      SANDBOX_ENV_LD_PRELOAD: '/nonexistent-sbx.so',
      SANDBOX_ENV_GREETING: 'hello',
    });
    try {
      const res = await execOver(
        agent.port,
        'echo "$NODE_OPTIONS|$LD_PRELOAD|$GREETING"; env | grep -c ^SANDBOX_ENV_',
      );
      expect(res).toMatchObject({
        stdout: '--require /nonexistent-sbx-module|/nonexistent-sbx.so|hello\n0\n',
      });
      // The shell's node would get the user's NODE_OPTIONS, as the user asked.
      const node = await execOver(
        agent.port,
        `${JSON.stringify(process.execPath)} -e 1 2>&1 | grep -q nonexistent-sbx-module && echo steered`,
      );
      expect(node).toMatchObject({ stdout: 'steered\n' });
    } finally {
      agent.child.kill('SIGKILL');
      await once(agent.child, 'exit');
    }
  }, 20_000);

  it('on SIGTERM lets the running command finish, then exits 0', async () => {
    const agent = await serve(baseEnv());
    const pending = execOver(agent.port, 'sleep 1; echo finished');
    await new Promise((r) => setTimeout(r, 300));
    agent.child.kill('SIGTERM');
    const [code] = (await once(agent.child, 'exit')) as [number | null];
    expect(await pending).toMatchObject({ stdout: 'finished\n', exitCode: 0 });
    expect(code).toBe(0);
    expect(agent.output()).not.toContain(token);
  }, 20_000);

  it('on SIGTERM kills a command that outlives the grace period, then exits 0', async () => {
    const secs = uniqueSleepSeconds();
    const agent = await serve({ ...baseEnv(), SANDBOX_AGENT_SHUTDOWN_GRACE_SECONDS: '1' });
    const pending = execOver(agent.port, `sleep ${secs}`);
    await new Promise((r) => setTimeout(r, 300));
    agent.child.kill('SIGTERM');
    const [code] = (await once(agent.child, 'exit')) as [number | null];
    expect(code).toBe(0);
    // Killed (137) by the shutdown after the grace, not run to its end: the sleep lasts 100 s.
    expect(await pending).toMatchObject({ exitCode: 137, timedOut: false });
    await eventually('no sleep left', async () => (await processesMatching(`sleep ${secs}`)).length === 0);
  }, 20_000);
});
