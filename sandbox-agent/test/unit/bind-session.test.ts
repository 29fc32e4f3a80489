/**
 * The session a bind starts (docs/adr/0016, "Env, Secrets and startup at bind time"): the bind's
 * env reaches the running shell, new processes and terminals, after the template's (and wins
 * over it); its startup command runs as a background process; a restarted agent starts both
 * again. A refused bind applies nothing, and no value reaches the agent's log. A Pod created for
 * its session runs its startup command from the configuration.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { bindSigner, type BindPayload, type ProcessInfo, type ProcessOutput } from '@sandbox-platform/api';

import type { BindConfig } from '../../src/bind/bind-config.js';
import { exportScript } from '../../src/bind/session-start.js';
import { warmUpExecPath } from '../../src/bind/warm-up.js';
import { eventually, TestAgent, type RawResponse } from './helpers/test-agent.js';

const signer = bindSigner(Buffer.alloc(32, 5));
const POD = { namespace: 'team-a', name: 'warm-sessionenv', uid: 'pod-uid-env' };
const token = 'c'.repeat(64);
/** Values with everything a shell could trip on; none may reach a log line. */
const SECRET = `s3cr3t-${randomBytes(6).toString('hex')} it's "quoted" $HOME \`x\` \\ é`;
const PLAIN = `plain-${randomBytes(6).toString('hex')}`;

let stateDir: string;
const agents: TestAgent[] = [];

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'sbx-bind-session-'));
});
afterAll(async () => {
  await rm(stateDir, { recursive: true, force: true });
});
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
});

function bindConfig(): BindConfig {
  return {
    key: signer.publicKeyHex,
    pod: POD,
    stateFile: join(stateDir, `${randomBytes(4).toString('hex')}.json`),
  };
}

async function warmAgent(
  bind: BindConfig = bindConfig(),
  sessionEnv: Record<string, string> = {},
): Promise<TestAgent> {
  const agent = await TestAgent.start({ token: '', bind, sessionEnv });
  agents.push(agent);
  return agent;
}

function payload(extra: Partial<BindPayload> = {}): BindPayload {
  return {
    version: 1,
    pod: POD,
    session: { namespace: 'team-a', name: 'demo', uid: 's-env' },
    token,
    ...extra,
  };
}

function call(agent: TestAgent, method: string, path: string, body?: unknown): Promise<RawResponse> {
  return agent.send(
    {
      method,
      path,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    },
    token,
  );
}

async function sh(agent: TestAgent, command: string): Promise<string> {
  const res = await call(agent, 'POST', '/v1/exec', { command });
  expect(res.status).toBe(200);
  return (JSON.parse(res.body.toString()) as { stdout: string }).stdout;
}

async function bind(agent: TestAgent, extra: Partial<BindPayload>): Promise<number> {
  const body = JSON.stringify(signer.sign(payload(extra)));
  const res = await agent.send(
    { method: 'POST', path: '/v1/bind', headers: { 'content-type': 'application/json' }, body },
    false,
  );
  return res.status;
}

async function processes(agent: TestAgent): Promise<ProcessInfo[]> {
  return (
    JSON.parse((await call(agent, 'GET', '/v1/processes')).body.toString()) as { processes: ProcessInfo[] }
  ).processes;
}

async function stdoutOf(agent: TestAgent, id: string): Promise<string> {
  const res = await call(agent, 'GET', `/v1/processes/${id}/output`);
  return text((JSON.parse(res.body.toString()) as ProcessOutput).stdout);
}

function text(chunk: ProcessOutput['stdout']): string {
  return Buffer.from(chunk.data, chunk.encoding === 'base64' ? 'base64' : 'utf8').toString();
}

const ENV = [
  { name: 'A', value: PLAIN },
  { name: 'C', value: SECRET },
  { name: 'SHARED', value: 'from-the-session' },
];

describe('a bind with env and a startup command', () => {
  it('exports the env in the running shell, after the template env, and in new processes', async () => {
    const agent = await warmAgent(bindConfig(), { T: 'template', SHARED: 'from-the-template' });
    expect(await bind(agent, { env: ENV })).toBe(200);
    expect(await sh(agent, 'printf "%s|%s|%s|%s" "$A" "$C" "$SHARED" "$T"')).toBe(
      `${PLAIN}|${SECRET}|from-the-session|template`,
    );
    const started = await call(agent, 'POST', '/v1/processes', { command: 'printf "%s" "$C"' });
    const { id } = JSON.parse(started.body.toString()) as ProcessInfo;
    await eventually('the process printed', async () => (await stdoutOf(agent, id)) === SECRET);
    // The agent's own environment and its log never hold a value.
    expect(process.env.C).toBeUndefined();
    const logs = agent.logs.join('\n');
    for (const value of [PLAIN, SECRET, 'from-the-session']) expect(logs).not.toContain(value);
    expect(logs).toContain('"env":3');
  });

  it('starts the startup command as a background process with the session env; its output is readable', async () => {
    const agent = await warmAgent();
    const command = 'printf "up:%s" "$A"; sleep 30';
    expect(await bind(agent, { env: ENV, startup: { command } })).toBe(200);
    let startup: ProcessInfo | undefined;
    await eventually('the startup process is listed', async () => {
      startup = (await processes(agent)).find((p) => p.command === command);
      return startup !== undefined;
    });
    expect(startup!.state).toBe('running');
    await eventually(
      'its output is readable',
      async () => (await stdoutOf(agent, startup!.id)) === `up:${PLAIN}`,
    );
  });

  it('starts both again when the agent restarts from its kept bind', async () => {
    const config = bindConfig();
    const first = await warmAgent(config);
    expect(await bind(first, { env: ENV, startup: { command: 'echo started-$A' } })).toBe(200);
    await first.stop();
    agents.splice(agents.indexOf(first), 1);
    const second = await warmAgent(config);
    expect(await sh(second, 'printf %s "$C"')).toBe(SECRET);
    await eventually('the startup process runs again', async () =>
      (await processes(second)).some((p) => p.command === 'echo started-$A'),
    );
  });

  it('applies nothing of a refused bind (forged), and a later genuine bind only its own env', async () => {
    const agent = await warmAgent();
    const forged = bindSigner(randomBytes(32)).sign(
      payload({ env: [{ name: 'X', value: SECRET }], startup: { command: 'touch forged' } }),
    );
    const res = await agent.send(
      {
        method: 'POST',
        path: '/v1/bind',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(forged),
      },
      false,
    );
    expect(res.status).toBe(401);
    expect(await bind(agent, {})).toBe(200);
    expect(await sh(agent, 'printf %s "${X-unset}"; test -e forged && echo forged-ran')).toBe('unset');
    expect(await processes(agent)).toEqual([]);
    expect(agent.logs.join('\n')).not.toContain(SECRET);
  });

  it('applies nothing of a bind that could not be kept (500), and a later bind only its own env', async () => {
    const dir = join(stateDir, `missing-${randomBytes(4).toString('hex')}`);
    const agent = await warmAgent({ ...bindConfig(), stateFile: join(dir, 'state.json') });
    expect(
      await bind(agent, { env: [{ name: 'X', value: SECRET }], startup: { command: 'touch kept' } }),
    ).toBe(500);
    await mkdir(dir);
    expect(await bind(agent, {})).toBe(200);
    expect(await sh(agent, 'printf %s "${X-unset}"; test -e kept && echo startup-ran')).toBe('unset');
    expect(await processes(agent)).toEqual([]);
  });

  it('refuses (401, as every refusal) env names the platform reserves or the shell cannot hold, applying nothing', async () => {
    const agent = await warmAgent();
    for (const env of [
      [{ name: 'SANDBOX_TOKEN', value: 'x' }],
      [{ name: 'A-B', value: 'x' }],
      [{ name: 'A', value: 'a\0b' }],
    ]) {
      expect(await bind(agent, { env })).toBe(401);
    }
    expect(await bind(agent, {})).toBe(200);
  });
});

describe('the warm-up of the exec path', () => {
  it('runs before the bind and leaves nothing the session sees: no shell reset, no process, no failure logged', async () => {
    const agent = await warmAgent();
    expect(await bind(agent, {})).toBe(200);
    const res = await call(agent, 'POST', '/v1/exec', { command: 'echo first' });
    expect(JSON.parse(res.body.toString())).toMatchObject({
      stdout: 'first\n',
      exitCode: 0,
      shellReset: false,
    });
    expect(await processes(agent)).toEqual([]);
    expect(agent.logs.join('\n')).not.toContain('warm-up failed');
  });

  it('answers like the exec route', async () => {
    const runs: string[] = [];
    const runner = {
      run: (request: { command: string }) => {
        runs.push(request.command);
        return Promise.resolve({
          exitCode: 0,
          durationMs: 1,
          truncated: false,
          timedOut: false,
          shellReset: false,
          truncatedStreams: { stdout: false, stderr: false },
        });
      },
    };
    expect(await warmUpExecPath(runner, { stdinMaxBytes: 1024 })).toBeGreaterThan(50);
    expect(runs).toEqual(['true']);
  });
});

describe('a Pod created for its session', () => {
  it('starts its startup command from the configuration, with the session env', async () => {
    const agent = await TestAgent.start({
      startupCommand: 'printf "cold:%s" "$GREETING"',
      sessionEnv: { GREETING: 'hi' },
    });
    agents.push(agent);
    const list = async (): Promise<ProcessInfo[]> =>
      (
        JSON.parse((await agent.send({ method: 'GET', path: '/v1/processes' })).body.toString()) as {
          processes: ProcessInfo[];
        }
      ).processes;
    await eventually('the startup process exited', async () =>
      (await list()).some((p) => p.state === 'exited'),
    );
    const [startup] = await list();
    const out = await agent.send({ method: 'GET', path: `/v1/processes/${startup!.id}/output` });
    expect(text((JSON.parse(out.body.toString()) as ProcessOutput).stdout)).toBe('cold:hi');
  });
});

describe('exportScript', () => {
  it('spells every value as one ASCII word, each line unable to end the script', () => {
    const script = exportScript([{ name: 'V', value: "a'b\nc é" }]);
    expect(script).toBe("command export V=$'a\\'b\\x0ac \\xc3\\xa9' 2>/dev/null || :\n");
  });
});
