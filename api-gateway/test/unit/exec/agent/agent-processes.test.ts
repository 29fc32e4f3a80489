/**
 * The gateway's process calls over a scripted agent: the start that follows its process in one
 * call (`POST /v1/processes?follow=1`, the E2B API's commands): the id and pid from its headers,
 * the body through the follow guard, an older agent's plain start answer, and what a hostile or
 * broken agent may answer instead (bad headers, problems, forged lines).
 */
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';

import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';

import { ProblemError } from '../../../../src/errors.js';
import { AgentProcesses } from '../../../../src/exec/agent/agent-processes.js';
import { AgentTransport } from '../../../../src/exec/agent/agent-transport.js';
import { DEMO_TARGET, FakeAgent, json } from '../../../helpers/fake-agent.js';

const target = DEMO_TARGET;

const INFO = {
  id: '0123456789ab',
  pid: 42,
  command: 'true',
  state: 'running',
  startedAt: '2026-12-07T00:00:00.000Z',
  stdout: { size: 0, dropped: 0 },
  stderr: { size: 0, dropped: 0 },
};

async function text(stream: Readable): Promise<string> {
  let out = '';
  for await (const chunk of stream as AsyncIterable<Buffer>) out += chunk.toString('utf8');
  return out;
}

describe('AgentProcesses.startFollow', () => {
  let agent: FakeAgent;
  let transport: AgentTransport;
  let processes: AgentProcesses;

  beforeEach(async () => {
    agent = new FakeAgent();
    const port = await agent.start();
    transport = new AgentTransport({
      masterKey: Buffer.alloc(32, 7),
      port,
      lookup: () => target.podIP,
      connectTimeoutMs: 500,
      connectRetries: 1,
      deadlineMarginMs: 200,
      maxOutputBytes: 64 * 1024,
      fileTimeoutMs: 2000,
    });
    processes = new AgentProcesses(transport);
  });
  afterEach(async () => {
    transport.close();
    await agent.stop();
  });

  const followAnswer =
    (headers: Record<string, string>, body: string, status = 200) =>
    (_req: unknown, res: ServerResponse): void => {
      res.writeHead(status, { 'content-type': 'application/x-ndjson', ...headers });
      res.end(body);
    };

  it('starts and follows in one call: id and pid from the headers, the output and exit lines', async () => {
    agent.handler = followAnswer(
      { 'x-process-id': INFO.id, 'x-process-pid': '42' },
      '{"type":"stdout","offset":0,"skipped":0,"data":"hi\\n","encoding":"utf-8"}\n{"type":"exit","exitCode":3}\n',
    );
    const started = await processes.startFollow(
      target,
      { command: 'echo hi; exit 3', env: { A: '1' } },
      { deadlineAt: Date.now() + 5000 },
    );
    expect(agent.seen[0]).toMatchObject({ method: 'POST', url: '/v1/processes?follow=1' });
    expect(JSON.parse(agent.seen[0]!.body.toString())).toEqual({
      command: 'echo hi; exit 3',
      env: { A: '1' },
    });
    expect(started).toMatchObject({ id: INFO.id, pid: 42 });
    const lines = (await text(started.stream!))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
    expect(lines).toEqual([
      { type: 'stdout', offset: 0, skipped: 0, data: 'hi\n', encoding: 'utf-8' },
      { type: 'exit', exitCode: 3 },
    ]);
  });

  it("takes an older agent's plain start answer (201 ProcessInfo): no stream, the caller follows", async () => {
    agent.handler = (_req, res) => json(res, 201, INFO);
    const started = await processes.startFollow(
      target,
      { command: 'true' },
      { deadlineAt: Date.now() + 5000 },
    );
    expect(started).toEqual({ id: INFO.id, pid: 42 });
  });

  it.each([
    ['no headers', {}],
    ['a malformed id', { 'x-process-id': '../../etc', 'x-process-pid': '42' }],
    ['a pid that is no number', { 'x-process-id': INFO.id, 'x-process-pid': '42abc' }],
    ['pid 0', { 'x-process-id': INFO.id, 'x-process-pid': '0' }],
  ])('answers 502 agent-protocol-error for a followed start with %s', async (_name, headers) => {
    agent.handler = followAnswer(headers, '{"type":"exit","exitCode":0}\n');
    await expect(
      processes.startFollow(target, { command: 'true' }, { deadlineAt: Date.now() + 5000 }),
    ).rejects.toMatchObject({ slug: 'agent-protocol-error' });
  });

  it("passes the agent's problems through (409 too-many-processes)", async () => {
    agent.handler = (_req, res) =>
      json(
        res,
        409,
        {
          type: 'https://sandbox.dev/problems/too-many-processes',
          title: 'Too many processes',
          status: 409,
          detail: 'the agent holds 16 processes',
        },
        'application/problem+json',
      );
    const err = await processes
      .startFollow(target, { command: 'true' }, { deadlineAt: Date.now() + 5000 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProblemError);
    expect(err).toMatchObject({ slug: 'too-many-processes' });
  });

  it('fails the stream with agent-protocol-error on a line outside the contract', async () => {
    agent.handler = followAnswer(
      { 'x-process-id': INFO.id, 'x-process-pid': '42' },
      '{"type":"stdout","offset":0,"skipped":0,"data":"hi","encoding":"utf-8","extra":1}\n',
    );
    const started = await processes.startFollow(
      target,
      { command: 'true' },
      { deadlineAt: Date.now() + 5000 },
    );
    await expect(text(started.stream!)).rejects.toMatchObject({ slug: 'agent-protocol-error' });
  });

  it('ends the stream without an exit line at the deadline (the caller follows again)', async () => {
    agent.handler = (_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/x-ndjson',
        'x-process-id': INFO.id,
        'x-process-pid': '42',
      });
      res.write('{"type":"stdout","offset":0,"skipped":0,"data":"a","encoding":"utf-8"}\n');
    };
    const started = await processes.startFollow(
      target,
      { command: 'sleep 9' },
      { deadlineAt: Date.now() + 300 },
    );
    expect((await text(started.stream!)).trim().split('\n')).toHaveLength(1);
  });
});
