/** HTTP surface: auth, health, problem shape, body limits, validation, keep-alive. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect } from 'node:net';

import { problemOf, TestAgent } from './helpers/test-agent.js';

describe('agent HTTP surface', () => {
  let agent: TestAgent;
  const bodyLimit = 4096;

  beforeAll(async () => {
    agent = await TestAgent.start({ execBodyMaxBytes: bodyLimit });
  });
  afterAll(async () => {
    await agent.stop();
  });

  const exec = (body: string, auth: boolean | string = true) =>
    agent.send(
      { method: 'POST', path: '/v1/exec', headers: { 'content-type': 'application/json' }, body },
      auth,
    );

  it('serves /healthz without a token', async () => {
    const res = await agent.send({ method: 'GET', path: '/healthz' }, false);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({ status: 'ok' });
  });

  it.each([
    ['no token', false],
    ['a wrong token of the same length', 'x'.repeat(64)],
    ['a prefix of the token', 'short'],
  ] as const)('answers 401 with %s', async (_name, auth) => {
    const res = await exec('{"command":"touch should-not-exist"}', auth);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(problemOf(res)).toEqual({
      type: 'https://sandbox.dev/problems/unauthorized',
      title: 'Unauthorized',
      status: 401,
      detail: expect.any(String),
    });
    expect(res.body.toString()).not.toContain(agent.token);
  });

  it('answers 401 for a non-Bearer scheme and for files without a token', async () => {
    const basic = await agent.send(
      {
        method: 'GET',
        path: '/v1/files/x',
        headers: { authorization: `Basic ${agent.token}` },
      },
      false,
    );
    expect(basic.status).toBe(401);
    expect((await agent.send({ method: 'PUT', path: '/v1/files/x', body: 'x' }, false)).status).toBe(401);
    expect(await agent.sh('ls should-not-exist x 2>&1 || true')).toMatch(/No such file/);
  });

  it('never logs the token or command output', async () => {
    await agent.exec({ command: 'echo secret-output-marker' });
    await exec('{"command":"true"}', 'wrong-token-marker');
    const logs = agent.logs.join('');
    expect(logs).not.toContain(agent.token);
    expect(logs).not.toContain('secret-output-marker');
    expect(logs).not.toContain('wrong-token-marker');
  });

  it('answers 413 for an exec body over the limit', async () => {
    const res = await exec(JSON.stringify({ command: `echo ${'a'.repeat(bodyLimit)}` }));
    expect(res.status).toBe(413);
    expect(problemOf(res)).toMatchObject({
      type: 'https://sandbox.dev/problems/payload-too-large',
      status: 413,
    });
  });

  it('answers 413 for a chunked exec body that grows over the limit', async () => {
    const res = await agent.send({
      method: 'POST',
      path: '/v1/exec',
      headers: { 'transfer-encoding': 'chunked' },
      body: JSON.stringify({ command: `echo ${'a'.repeat(bodyLimit)}` }),
    });
    expect(res.status).toBe(413);
  });

  it.each([
    ['malformed JSON', '{"command": "echo"'],
    ['a JSON array', '["echo"]'],
    ['a missing command', '{}'],
    ['an empty command', '{"command": ""}'],
    ['a command of the wrong type', '{"command": 42}'],
    ['an unknown field', '{"command": "true", "timeout": 5}'],
    ['a timeout of 0', '{"command": "true", "timeoutSeconds": 0}'],
    ['a timeout over 300', '{"command": "true", "timeoutSeconds": 301}'],
    ['a fractional timeout', '{"command": "true", "timeoutSeconds": 1.5}'],
    ['a timeout as a string', '{"command": "true", "timeoutSeconds": "5"}'],
    ['cwd of the wrong type', '{"command": "true", "cwd": 1}'],
    ['env as an array', '{"command": "true", "env": ["A=1"]}'],
    ['an invalid env name', '{"command": "true", "env": {"A-B": "1"}}'],
    ['an env name that injects code', '{"command": "true", "env": {"$(touch x)": "1"}}'],
    ['a non-string env value', '{"command": "true", "env": {"A": 1}}'],
    ['a NUL in the command', '{"command": "echo \\u0000"}'],
  ])('answers 400 for %s', async (_name, body) => {
    const res = await exec(body);
    expect(res.status).toBe(400);
    expect(problemOf(res)).toMatchObject({
      type: 'https://sandbox.dev/problems/invalid-request',
      status: 400,
    });
  });

  it('answers 404 for unknown routes and methods (after auth)', async () => {
    expect(problemOf(await agent.send({ method: 'GET', path: '/v1/nothing' })).status).toBe(404);
    expect(problemOf(await agent.send({ method: 'DELETE', path: '/v1/files/x' })).status).toBe(404);
    expect((await agent.send({ method: 'GET', path: '/v1/nothing' }, false)).status).toBe(401);
  });

  it('serves sequential calls on one keep-alive connection', async () => {
    const first = await agent.send({ method: 'GET', path: '/healthz' }, false);
    const second = await exec('{"command":"true"}');
    const third = await exec('{"command":"true"}');
    expect([first.status, second.status, third.status]).toEqual([200, 200, 200]);
    expect(second.reusedSocket || third.reusedSocket).toBe(true);
    expect(first.headers.connection).toBe('keep-alive');
  });
});

describe('agent HTTP timeouts', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start({ requestTimeoutMs: 1000, headersTimeoutMs: 1000 });
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('answers a command that runs longer than the request receive timeout', async () => {
    // requestTimeout bounds receiving the request only; exec answers may take up to 300 s.
    const res = await agent.exec({ command: 'sleep 2.5; echo done' });
    expect(res).toMatchObject({ stdout: 'done\n', exitCode: 0 });
  });

  it('closes a connection whose request headers never complete', async () => {
    const socket = connect(agent.running.port, '127.0.0.1');
    socket.write('POST /v1/exec HTTP/1.1\r\nHost: x\r\n');
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    // A safety net, not a bound: if the agent never closes it, the test closes it without a 408.
    const safetyNet = setTimeout(() => socket.destroy(), 8000);
    await new Promise<void>((resolve) => socket.on('close', () => resolve()));
    clearTimeout(safetyNet);
    // 408 names the cause: the agent's headers timeout closed it.
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  }, 15_000);
});
