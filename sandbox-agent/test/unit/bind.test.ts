/**
 * A warm Pod's agent (docs/adr/0016-warm-pools.md): it starts unbound and opens to nothing, accepts
 * exactly one bind signed with the operator's key and naming its own Pod, then accepts the session
 * token and nothing else, and stays bound when restarted. Every refusal is 401.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { bindSigner, type BindPayload, type BindRequest } from '@sandbox-platform/api';

import type { BindConfig } from '../../src/bind/bind-config.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { problemOf, TestAgent, type RawResponse } from './helpers/test-agent.js';

const signer = bindSigner(Buffer.alloc(32, 3));
const POD = { namespace: 'team-a', name: 'warm-abcdefghij', uid: 'pod-uid-1' };
const tokenA = 'a'.repeat(64);
const tokenB = 'b'.repeat(64);

let stateDir: string;
const agents: TestAgent[] = [];

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'sbx-bind-'));
});

afterAll(async () => {
  await rm(stateDir, { recursive: true, force: true });
});

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
});

function bindConfig(stateFile = join(stateDir, `${randomBytes(4).toString('hex')}.json`)): BindConfig {
  return { key: signer.publicKeyHex, pod: POD, stateFile };
}

async function warmAgent(bind: BindConfig = bindConfig()): Promise<TestAgent> {
  const agent = await TestAgent.start({ token: '', bind });
  agents.push(agent);
  return agent;
}

function payload(token: string, overrides: Partial<BindPayload> = {}): BindPayload {
  return {
    version: 1,
    pod: POD,
    session: { namespace: 'team-a', name: 'demo', uid: 's-1' },
    token,
    ...overrides,
  };
}

function postBind(agent: TestAgent, body: BindRequest | string): Promise<RawResponse> {
  return agent.send(
    {
      method: 'POST',
      path: '/v1/bind',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    },
    false,
  );
}

function execWith(agent: TestAgent, token: string | false): Promise<RawResponse> {
  return agent.send(
    {
      method: 'POST',
      path: '/v1/exec',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'echo hi' }),
    },
    token,
  );
}

describe('an unbound warm agent', () => {
  it('is ready but opens to no token at all', async () => {
    const agent = await warmAgent();
    expect((await agent.send({ method: 'GET', path: '/healthz' }, false)).status).toBe(200);
    for (const token of [false, '', tokenA, signer.publicKeyHex] as const) {
      const res = await execWith(agent, token);
      expect([token, res.status]).toEqual([token, 401]);
    }
    expect((await agent.send({ method: 'GET', path: '/v1/bind' }, tokenA)).status).toBe(401);
  });
});

describe('the bind', () => {
  it('turns the session token into the only accepted token', async () => {
    const agent = await warmAgent();
    const res = await postBind(agent, signer.sign(payload(tokenA)));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({
      bound: true,
      session: { namespace: 'team-a', name: 'demo', uid: 's-1' },
    });
    expect((await execWith(agent, tokenA)).status).toBe(200);
    expect((await execWith(agent, tokenB)).status).toBe(401);
    const status = await agent.send({ method: 'GET', path: '/v1/bind' }, tokenA);
    expect(JSON.parse(status.body.toString())).toMatchObject({ bound: true, session: { name: 'demo' } });
  });

  it('refuses a replay of the accepted bind with 401, and a second bind for another session', async () => {
    const agent = await warmAgent();
    const first = signer.sign(payload(tokenA));
    expect((await postBind(agent, first)).status).toBe(200);
    const replay = await postBind(agent, first);
    expect(replay.status).toBe(401);
    expect(problemOf(replay).type).toBe('https://sandbox.dev/problems/unauthorized');
    const other = signer.sign(
      payload(tokenB, { session: { namespace: 'team-a', name: 'other', uid: 's-2' } }),
    );
    expect((await postBind(agent, other)).status).toBe(401);
    expect((await execWith(agent, tokenB)).status).toBe(401);
    expect((await execWith(agent, tokenA)).status).toBe(200);
  });

  it('refuses a forged bind (signed with another key) with 401 and stays unbound', async () => {
    const agent = await warmAgent();
    const forged = bindSigner(randomBytes(32)).sign(payload(tokenB));
    expect((await postBind(agent, forged)).status).toBe(401);
    expect((await execWith(agent, tokenB)).status).toBe(401);
    // The operator's genuine bind still works afterwards.
    expect((await postBind(agent, signer.sign(payload(tokenA)))).status).toBe(200);
  });

  it('refuses a payload altered after signing (the token swapped) with 401', async () => {
    const agent = await warmAgent();
    const genuine = signer.sign(payload(tokenA));
    const altered = { ...genuine, payload: genuine.payload.replace(tokenA, tokenB) };
    expect((await postBind(agent, altered)).status).toBe(401);
    expect((await execWith(agent, tokenB)).status).toBe(401);
  });

  it('refuses a bind signed for another Pod (replayed from another warm Pod) with 401', async () => {
    const agent = await warmAgent();
    for (const pod of [
      { ...POD, uid: 'pod-uid-2' },
      { ...POD, name: 'warm-zzzzzzzzzz' },
      { ...POD, namespace: 'team-b' },
    ]) {
      expect((await postBind(agent, signer.sign(payload(tokenA, { pod })))).status).toBe(401);
    }
    expect((await execWith(agent, tokenA)).status).toBe(401);
  });

  it('lets exactly one of two concurrent valid binds win', async () => {
    const agent = await warmAgent();
    const [a, b] = await Promise.all([
      postBind(agent, signer.sign(payload(tokenA))),
      postBind(
        agent,
        signer.sign(payload(tokenB, { session: { namespace: 'team-a', name: 'x', uid: 's-3' } })),
      ),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 401]);
    const winner = a.status === 200 ? tokenA : tokenB;
    const loser = winner === tokenA ? tokenB : tokenA;
    expect((await execWith(agent, winner)).status).toBe(200);
    expect((await execWith(agent, loser)).status).toBe(401);
  });

  it('answers a malformed body with 400, and the bind credential used as a bearer with 401', async () => {
    const agent = await warmAgent();
    expect((await postBind(agent, '{"payload": 1}')).status).toBe(400);
    const genuine = signer.sign(payload(tokenA));
    expect((await postBind(agent, genuine)).status).toBe(200);
    for (const bearer of [genuine.signature, signer.publicKeyHex, genuine.payload.slice(0, 64)]) {
      expect((await execWith(agent, bearer)).status).toBe(401);
    }
  });
});

describe('keeping the bind', () => {
  it('answers 500 and stays unbound when the state cannot be written; a later bind can still win', async () => {
    const stateFile = join(stateDir, 'missing-dir', 'state.json');
    const agent = await warmAgent(bindConfig(stateFile));
    expect((await postBind(agent, signer.sign(payload(tokenA)))).status).toBe(500);
    expect((await execWith(agent, tokenA)).status).toBe(401);
    expect((await agent.send({ method: 'GET', path: '/v1/bind' }, tokenA)).status).toBe(401);
    await mkdir(join(stateDir, 'missing-dir'));
    expect((await postBind(agent, signer.sign(payload(tokenB)))).status).toBe(200);
    expect((await execWith(agent, tokenB)).status).toBe(200);
    expect((await execWith(agent, tokenA)).status).toBe(401);
  });

  it('warms up at start without binding or writing anything', async () => {
    const bind = bindConfig();
    const agent = await warmAgent(bind);
    await expect(stat(bind.stateFile)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(stat(`${bind.stateFile}.tmp`)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(agent.logs.some((l) => l.includes('bind refused'))).toBe(false);
    expect((await postBind(agent, signer.sign(payload(tokenA)))).status).toBe(200);
  });
});

describe('a restarted warm agent', () => {
  it('is bound again to the same session from its state file', async () => {
    const bind = bindConfig();
    const first = await warmAgent(bind);
    expect((await postBind(first, signer.sign(payload(tokenA)))).status).toBe(200);
    await first.stop();
    agents.splice(agents.indexOf(first), 1);
    const second = await warmAgent(bind);
    expect((await execWith(second, tokenA)).status).toBe(200);
    expect((await postBind(second, signer.sign(payload(tokenB)))).status).toBe(401);
  });

  it('stays unbound when the state file was changed (a token swapped in by the sandbox user)', async () => {
    const bind = bindConfig();
    const first = await warmAgent(bind);
    expect((await postBind(first, signer.sign(payload(tokenA)))).status).toBe(200);
    await first.stop();
    agents.splice(agents.indexOf(first), 1);
    await writeFile(bind.stateFile, (await readFile(bind.stateFile, 'utf8')).replace(tokenA, tokenB));
    const second = await warmAgent(bind);
    expect((await execWith(second, tokenB)).status).toBe(401);
    expect((await execWith(second, tokenA)).status).toBe(401);
    expect(second.logs.some((l) => l.includes('the bind state does not verify'))).toBe(true);
  });
});

describe('an agent started with its token (a cold Pod)', () => {
  it('has no bind: POST /v1/bind is 404 and its token works as before', async () => {
    const agent = await TestAgent.start();
    agents.push(agent);
    const res = await postBind(agent, signer.sign(payload(tokenA)));
    expect(res.status).toBe(404);
    expect((await execWith(agent, agent.token)).status).toBe(200);
    expect((await execWith(agent, tokenA)).status).toBe(401);
  });
});

describe('bind configuration from the environment', () => {
  const base = { SANDBOX_AGENT_BIND_KEY: signer.publicKeyHex, SANDBOX_TOKEN_FILE: '' };

  it('needs no token, and the Pod identity from the downward API', () => {
    const config = loadConfig({
      ...base,
      SANDBOX_AGENT_POD_NAME: POD.name,
      SANDBOX_AGENT_POD_UID: POD.uid,
      SANDBOX_AGENT_POD_NAMESPACE: POD.namespace,
    });
    expect(config.token).toBe('');
    expect(config.bind).toEqual({
      key: signer.publicKeyHex,
      pod: POD,
      stateFile: '/var/run/sandbox/bind.json',
    });
  });

  it('refuses a missing Pod identity or a malformed key, naming them', () => {
    expect(() => loadConfig(base)).toThrow(ConfigError);
    expect(() => loadConfig(base)).toThrow(/SANDBOX_AGENT_POD_UID must be set/);
    expect(() =>
      loadConfig({
        SANDBOX_AGENT_BIND_KEY: 'nothex',
        SANDBOX_AGENT_POD_NAME: 'p',
        SANDBOX_AGENT_POD_UID: 'u',
        SANDBOX_AGENT_POD_NAMESPACE: 'n',
      }),
    ).toThrow(/SANDBOX_AGENT_BIND_KEY: the bind key must be 64 lowercase hex/);
  });
});
