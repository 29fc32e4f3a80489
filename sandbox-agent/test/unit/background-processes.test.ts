/**
 * /v1/processes against a real bash: start, list, read (offsets, rings), follow, signal, wait,
 * remove; caps and problems with stable slugs; processes end with the agent.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';

import type { ProcessInfo, ProcessOutput } from '@sandbox-platform/api';

import { createLogger } from '../../src/log.js';
import { groupExists, ProcessTable } from '../../src/processes/process-table.js';
import { NdjsonCall } from './helpers/ndjson-client.js';
import {
  eventually,
  problemOf,
  processesMatching,
  type RawResponse,
  TestAgent,
  uniqueSleepSeconds,
} from './helpers/test-agent.js';

const json = <T>(res: RawResponse): T => JSON.parse(res.body.toString()) as T;

/** The process API of one agent. */
function api(agent: TestAgent) {
  const call = (method: string, path: string, body?: unknown) =>
    agent.send({
      method,
      path,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return {
    call,
    async start(body: Record<string, unknown>): Promise<ProcessInfo> {
      const res = await call('POST', '/v1/processes', body);
      if (res.status !== 201) throw new Error(`start answered ${res.status}: ${res.body.toString()}`);
      return json<ProcessInfo>(res);
    },
    async wait(id: string, timeoutSeconds = 10): Promise<ProcessInfo> {
      const res = await call('GET', `/v1/processes/${id}/wait?timeoutSeconds=${timeoutSeconds}`);
      if (res.status !== 200) throw new Error(`wait answered ${res.status}: ${res.body.toString()}`);
      return json<ProcessInfo>(res);
    },
    async output(id: string, query = ''): Promise<ProcessOutput> {
      const res = await call('GET', `/v1/processes/${id}/output${query}`);
      if (res.status !== 200) throw new Error(`output answered ${res.status}: ${res.body.toString()}`);
      return json<ProcessOutput>(res);
    },
    signal: (id: string, signal: unknown) => call('POST', `/v1/processes/${id}/signal`, { signal }),
    remove: (id: string) => call('DELETE', `/v1/processes/${id}`),
  };
}

/** The pgid and sid fields of /proc/<pid>/stat. */
async function groupAndSession(pid: number): Promise<{ pgid: number; sid: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pgid: Number(rest[2]), sid: Number(rest[3]) };
}

describe('background processes', () => {
  let agent: TestAgent;
  let p: ReturnType<typeof api>;

  beforeAll(async () => {
    agent = await TestAgent.start({ sessionEnv: { SESSION_VAR: 'from-session' } });
    p = api(agent);
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('starts a command, waits for its exit and reads both streams', async () => {
    const res = await p.call('POST', '/v1/processes', { command: 'echo out; echo err >&2; exit 3' });
    expect(res.status).toBe(201);
    const started = json<ProcessInfo>(res);
    expect(res.headers.location).toBe(`/v1/processes/${started.id}`);
    expect(started).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{12}$/),
      command: 'echo out; echo err >&2; exit 3',
    });
    const done = await p.wait(started.id);
    expect(done).toMatchObject({
      state: 'exited',
      exitCode: 3,
      stdout: { size: 4, dropped: 0 },
      stderr: { size: 4, dropped: 0 },
      exitedAt: expect.any(String),
    });
    expect(done).not.toHaveProperty('signal');
    const out = await p.output(started.id);
    expect(out.stdout).toEqual({ offset: 0, nextOffset: 4, skipped: 0, data: 'out\n', encoding: 'utf-8' });
    expect(out.stderr).toMatchObject({ data: 'err\n', nextOffset: 4 });
    expect(out.process.state).toBe('exited');
  });

  it('lists, describes and removes processes; a removed id is 404 process-not-found', async () => {
    const a = await p.start({ command: 'true' });
    await p.wait(a.id);
    const list = json<{ processes: ProcessInfo[] }>(await p.call('GET', '/v1/processes'));
    expect(list.processes.map((x) => x.id)).toContain(a.id);
    expect(json<ProcessInfo>(await p.call('GET', `/v1/processes/${a.id}`))).toMatchObject({
      id: a.id,
      state: 'exited',
    });
    const removed = await p.remove(a.id);
    expect(removed.status).toBe(204);
    const gone = await p.call('GET', `/v1/processes/${a.id}`);
    expect(gone.status).toBe(404);
    expect(problemOf(gone)).toMatchObject({
      type: 'https://sandbox.dev/problems/process-not-found',
      detail: `no process has the id "${a.id}"`,
    });
    const listed = json<{ processes: ProcessInfo[] }>(await p.call('GET', '/v1/processes'));
    expect(listed.processes.map((x) => x.id)).not.toContain(a.id);
  });

  it('runs in its own session and process group, outliving calls and a shell reset', async () => {
    const marker = uniqueSleepSeconds();
    const proc = await p.start({ command: `sleep ${marker}` });
    expect(await groupAndSession(proc.pid)).toEqual({ pgid: proc.pid, sid: proc.pid });
    await agent.exec({ command: 'exit 9' }); // the persistent bash dies and is restarted
    expect((await agent.exec({ command: 'true' })).shellReset).toBe(true);
    expect(await groupAndSession(proc.pid)).toEqual({ pgid: proc.pid, sid: proc.pid });
    expect((await processesMatching(`sleep ${marker}`)).length).toBeGreaterThan(0);
    expect(json<ProcessInfo>(await p.call('GET', `/v1/processes/${proc.id}`)).state).toBe('running');
    await p.signal(proc.id, 'SIGKILL');
    expect(await p.wait(proc.id)).toMatchObject({ state: 'exited', exitCode: 137, signal: 'SIGKILL' });
  });

  it('repeats at most the first 4096 characters of a long command in its description', async () => {
    const command = `: ${'x'.repeat(10_000)}; echo ran`;
    const proc = await p.start({ command });
    expect(proc.command).toBe(command.slice(0, 4096));
    await p.wait(proc.id);
    expect((await p.output(proc.id)).stdout.data).toBe('ran\n');
    await p.remove(proc.id);
  });

  it('gets the session env, its own env and cwd, and stdin from /dev/null', async () => {
    await agent.sh('mkdir -p sub/dir');
    const proc = await p.start({
      command: 'echo "$SESSION_VAR $OWN"; pwd; cat; echo "[$?]"; env | grep -c ^SANDBOX_ || true',
      cwd: 'sub/dir',
      env: { OWN: 'own value' },
    });
    await p.wait(proc.id);
    const out = await p.output(proc.id);
    expect(out.stdout.data).toBe(`from-session own value\n${agent.workspace}/sub/dir\n[0]\n0\n`);
    expect(out.process.cwd).toBe('sub/dir');
  });

  it('fails like `cd dir && command` when cwd does not exist', async () => {
    const proc = await p.start({ command: 'echo never', cwd: 'no/such/dir' });
    const done = await p.wait(proc.id);
    expect(done.exitCode).toBe(1);
    const out = await p.output(proc.id);
    expect(out.stdout.data).toBe('');
    expect(out.stderr.data).toMatch(/no\/such\/dir/);
  });

  it('stops a process with SIGTERM and reports the signal; a process that traps it exits its own way', async () => {
    const proc = await p.start({ command: `sleep ${uniqueSleepSeconds()}` });
    const signalled = await p.signal(proc.id, 'SIGTERM');
    expect(signalled.status).toBe(200);
    expect(json<ProcessInfo>(signalled).id).toBe(proc.id);
    expect(await p.wait(proc.id)).toMatchObject({ state: 'exited', exitCode: 143, signal: 'SIGTERM' });
    const trapper = await p.start({
      command: 'trap "echo got-usr1; exit 5" USR1; echo ready; while :; do sleep 0.05; done',
    });
    await eventually('the trap is set', async () => (await p.output(trapper.id)).stdout.data === 'ready\n');
    await p.signal(trapper.id, 'SIGUSR1');
    expect(await p.wait(trapper.id)).toMatchObject({ exitCode: 5 });
    expect((await p.output(trapper.id)).stdout.data).toBe('ready\ngot-usr1\n');
  });

  it('answers wait with the running state when the timeout passes first', async () => {
    const proc = await p.start({ command: `sleep ${uniqueSleepSeconds()}` });
    expect(await p.wait(proc.id, 0)).toMatchObject({ state: 'running' });
    expect(await p.wait(proc.id, 1)).toMatchObject({ state: 'running' });
    expect(await p.wait(proc.id, 1)).not.toHaveProperty('exitCode');
    const running = await p.remove(proc.id);
    expect(running.status).toBe(409);
    expect(problemOf(running)).toMatchObject({ type: 'https://sandbox.dev/problems/process-running' });
    await p.signal(proc.id, 'SIGKILL');
    await p.wait(proc.id);
    const exited = await p.signal(proc.id, 'SIGTERM');
    expect(exited.status).toBe(409);
    expect(problemOf(exited)).toMatchObject({ type: 'https://sandbox.dev/problems/process-exited' });
  });

  it('reads from offsets, in pieces, and refuses an offset past the end', async () => {
    const proc = await p.start({ command: 'printf abcdef' });
    await p.wait(proc.id);
    expect((await p.output(proc.id, '?stdoutOffset=2')).stdout).toMatchObject({
      offset: 2,
      nextOffset: 6,
      data: 'cdef',
    });
    expect((await p.output(proc.id, '?maxBytes=2')).stdout).toMatchObject({
      offset: 0,
      nextOffset: 2,
      data: 'ab',
    });
    expect((await p.output(proc.id, '?stdoutOffset=6')).stdout).toMatchObject({
      offset: 6,
      nextOffset: 6,
      data: '',
    });
    const past = await p.call('GET', `/v1/processes/${proc.id}/output?stdoutOffset=7`);
    expect(past.status).toBe(400);
    expect(problemOf(past).detail).toBe('stdoutOffset 7 is past the end of stdout (6 bytes)');
  });

  it('keeps a character cut at the end of what is there for the next read while the process runs', async () => {
    const proc = await p.start({ command: "printf 'caf\\xc3'; sleep 0.5; printf '\\xa9!'" });
    await eventually('the first bytes', async () => (await p.output(proc.id)).process.stdout.size === 4);
    const first = await p.output(proc.id);
    expect(first.stdout).toMatchObject({ data: 'caf', encoding: 'utf-8', nextOffset: 3 });
    await p.wait(proc.id);
    const rest = await p.output(proc.id, `?stdoutOffset=${first.stdout.nextOffset}`);
    expect(rest.stdout).toMatchObject({ offset: 3, data: 'é!', encoding: 'utf-8', nextOffset: 6 });
  });

  it('returns binary output as base64', async () => {
    const proc = await p.start({ command: "printf '\\x00\\xff\\xfe'" });
    await p.wait(proc.id);
    expect((await p.output(proc.id)).stdout).toMatchObject({
      data: 'AP/+',
      encoding: 'base64',
      nextOffset: 3,
    });
  });

  it('follows the output as it comes, then ends with the exit line', async () => {
    const proc = await p.start({
      command: 'for i in 1 2 3; do echo "line $i"; sleep 0.2; done; echo bye >&2; exit 2',
    });
    const call = NdjsonCall.get(agent, `/v1/processes/${proc.id}/output/stream`);
    // Following: the first line arrives while the process still runs.
    await call.until('line 1', () => call.output('stdout').toString() === 'line 1\n');
    expect(json<ProcessInfo>(await p.call('GET', `/v1/processes/${proc.id}`)).state).toBe('running');
    await call.done;
    expect(call.events.at(-1)).toEqual({ type: 'exit', exitCode: 2 });
    expect(call.output('stdout').toString()).toBe('line 1\nline 2\nline 3\n');
    expect(call.output('stderr').toString()).toBe('bye\n');
    for (const e of call.events.slice(0, -1))
      expect(e).toMatchObject({ skipped: 0, offset: expect.any(Number) });
  });

  it('starts and follows in one call with follow=1: id and pid in headers, output as it comes, then the exit', async () => {
    const call = NdjsonCall.open(agent, '/v1/processes?follow=1', 'application/json');
    await call.raw(
      JSON.stringify({
        command:
          'echo "$SESSION_VAR $OWN"; pwd; for i in 1 2; do echo "line $i"; sleep 0.2; done; echo bye >&2; exit 2',
        env: { OWN: 'own' },
        cwd: tmpdir(),
      }),
    );
    call.end();
    const res = await call.response;
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-ndjson');
    const id = String(res.headers['x-process-id']);
    expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect(res.headers.location).toBe(`/v1/processes/${id}`);
    // Listed, described and signalable while it runs, like any other process.
    await call.until('line 1', () => call.output('stdout').toString().includes('line 1\n'));
    const info = json<ProcessInfo>(await p.call('GET', `/v1/processes/${id}`));
    expect(info).toMatchObject({ state: 'running', pid: Number(res.headers['x-process-pid']) });
    expect(
      json<{ processes: ProcessInfo[] }>(await p.call('GET', '/v1/processes')).processes.map((x) => x.id),
    ).toContain(id);
    await call.done;
    expect(call.events.at(-1)).toEqual({ type: 'exit', exitCode: 2 });
    expect(call.output('stdout').toString()).toBe(`from-session own\n${tmpdir()}\nline 1\nline 2\n`);
    expect(call.output('stderr').toString()).toBe('bye\n');
    // It stays until removed, as a plain start's does.
    expect(await p.wait(id)).toMatchObject({ state: 'exited', exitCode: 2 });
    expect((await p.remove(id)).status).toBe(204);
  });

  it('ends a follow=1 call with the exit of a process killed meanwhile', async () => {
    const call = NdjsonCall.open(agent, '/v1/processes?follow=1', 'application/json');
    await call.raw(JSON.stringify({ command: 'echo up; exec sleep 30' }));
    call.end();
    const res = await call.response;
    const id = String(res.headers['x-process-id']);
    await call.until('up', () => call.output('stdout').toString() === 'up\n');
    expect((await p.signal(id, 'SIGKILL')).status).toBe(200);
    await call.done;
    expect(call.events.at(-1)).toEqual({ type: 'exit', exitCode: 137, signal: 'SIGKILL' });
    await p.remove(id);
  });

  it.each([
    ['a follow other than 0 or 1', '?follow=2'],
    ['a follow that is not an integer', '?follow=yes'],
    ['an unknown query parameter', '?tail=1'],
  ])('answers 400 invalid-request for a start with %s, starting nothing', async (_name, query) => {
    const before = json<{ processes: ProcessInfo[] }>(await p.call('GET', '/v1/processes')).processes.length;
    const res = await p.call('POST', `/v1/processes${query}`, { command: 'true' });
    expect(res.status).toBe(400);
    expect(problemOf(res).type).toBe('https://sandbox.dev/problems/invalid-request');
    expect(json<{ processes: ProcessInfo[] }>(await p.call('GET', '/v1/processes')).processes.length).toBe(
      before,
    );
  });

  it('answers a start with follow=0 as a plain start (201 ProcessInfo)', async () => {
    const res = await p.call('POST', '/v1/processes?follow=0', { command: 'true' });
    expect(res.status).toBe(201);
    const started = json<ProcessInfo>(res);
    await p.wait(started.id);
    await p.remove(started.id);
  });

  it('follows from offsets (resuming after a disconnect)', async () => {
    const proc = await p.start({ command: 'printf 0123456789; printf ab >&2' });
    await p.wait(proc.id);
    const res = await agent.send({
      method: 'GET',
      path: `/v1/processes/${proc.id}/output/stream?stdoutOffset=7&stderrOffset=1`,
    });
    expect(res.headers['content-type']).toBe('application/x-ndjson');
    const events = res.body
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events).toEqual([
      { type: 'stdout', offset: 7, skipped: 0, data: '789', encoding: 'utf-8' },
      { type: 'stderr', offset: 1, skipped: 0, data: 'b', encoding: 'utf-8' },
      { type: 'exit', exitCode: 0 },
    ]);
  });

  it.each([
    ['an unknown id', 'GET', '/v1/processes/0123456789ab', 404, 'process-not-found'],
    ['a malformed id', 'GET', '/v1/processes/not-an-id', 404, 'process-not-found'],
    ['a bad escape in the id', 'GET', '/v1/processes/%zz', 404, 'process-not-found'],
    ['an unknown id to signal', 'POST', '/v1/processes/0123456789ab/signal', 404, 'process-not-found'],
    ['an unknown id to wait for', 'GET', '/v1/processes/0123456789ab/wait', 404, 'process-not-found'],
    ['an unknown id to follow', 'GET', '/v1/processes/0123456789ab/output/stream', 404, 'process-not-found'],
    ['an unknown action', 'GET', '/v1/processes/0123456789ab/frobnicate', 404, 'not-found'],
    ['a method the path does not have', 'PUT', '/v1/processes', 404, 'not-found'],
  ])('answers %s with %s %s', async (_name, method, path, status, slug) => {
    const res = await p.call(method, path, method === 'POST' ? { signal: 'SIGTERM' } : undefined);
    expect(res.status).toBe(status);
    expect(problemOf(res).type).toBe(`https://sandbox.dev/problems/${slug}`);
  });

  it.each([
    ['a missing command', {}, 'command is required'],
    ['an empty command', { command: '' }, 'command must not be empty'],
    ['an unknown field', { command: 'true', timeoutSeconds: 5 }, 'unknown field: timeoutSeconds'],
    [
      'an invalid env name',
      { command: 'true', env: { 'A-B': '1' } },
      'env name "A-B" is not a valid variable name',
    ],
    ['a NUL in cwd', { command: 'true', cwd: 'a\u0000b' }, 'cwd must not contain NUL characters'],
  ])('answers 400 invalid-request for a start with %s', async (_name, body, detail) => {
    const res = await p.call('POST', '/v1/processes', body);
    expect(res.status).toBe(400);
    expect(problemOf(res)).toMatchObject({ type: 'https://sandbox.dev/problems/invalid-request', detail });
  });

  it('answers 400 signal-not-allowed for a signal outside the allow-list, 400 for a malformed body', async () => {
    const proc = await p.start({ command: `sleep ${uniqueSleepSeconds()}` });
    for (const signal of ['SIGSEGV', 'TERM', 'SIGSYS']) {
      const res = await p.signal(proc.id, signal);
      expect(res.status).toBe(400);
      expect(problemOf(res)).toMatchObject({
        type: 'https://sandbox.dev/problems/signal-not-allowed',
        title: 'Signal not allowed',
        detail: `signal "${signal}" is not allowed; use one of SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGTERM, SIGUSR1, SIGUSR2, SIGSTOP, SIGCONT`,
      });
    }
    expect(problemOf(await p.signal(proc.id, 15)).type).toBe('https://sandbox.dev/problems/invalid-request');
    expect(json<ProcessInfo>(await p.call('GET', `/v1/processes/${proc.id}`)).state).toBe('running');
    await p.signal(proc.id, 'SIGKILL');
    await p.wait(proc.id);
  });

  it.each([
    ['a non-integer maxBytes', '/output?maxBytes=abc', 'maxBytes must be an integer'],
    [
      'a blank offset (ajv would read it as 0)',
      '/output?stdoutOffset=%20',
      'stdoutOffset must be an integer',
    ],
    ['a hex offset', '/output?stdoutOffset=0x10', 'stdoutOffset must be an integer'],
    ['maxBytes 0', '/output?maxBytes=0', 'maxBytes must be >= 1'],
    ['an unknown parameter', '/output?offset=1', 'unknown parameter: offset'],
    ['a parameter given twice', '/output?maxBytes=1&maxBytes=2', 'query parameter maxBytes is given twice'],
    ['a wait over 300 s', '/wait?timeoutSeconds=301', 'timeoutSeconds must be <= 300'],
  ])('answers 400 for a query with %s', async (_name, suffix, detail) => {
    const proc = await p.start({ command: 'true' });
    const res = await p.call('GET', `/v1/processes/${proc.id}${suffix}`);
    expect(res.status).toBe(400);
    expect(problemOf(res)).toMatchObject({ type: 'https://sandbox.dev/problems/invalid-request', detail });
    await p.wait(proc.id);
    await p.remove(proc.id);
  });

  it('kills what an exited process left in its group when it is removed', async () => {
    const marker = uniqueSleepSeconds();
    const proc = await p.start({ command: `sleep ${marker} & echo started` });
    expect(await p.wait(proc.id)).toMatchObject({ state: 'exited', exitCode: 0 });
    expect((await processesMatching(`sleep ${marker}`)).length).toBe(1);
    await p.remove(proc.id);
    await eventually(
      'the leftover sleep is gone',
      async () => (await processesMatching(`sleep ${marker}`)).length === 0,
    );
  });
});

describe('background process limits', () => {
  let agent: TestAgent;
  let p: ReturnType<typeof api>;

  beforeAll(async () => {
    agent = await TestAgent.start({ maxProcesses: 2, processOutputBytes: 1024 });
    p = api(agent);
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('keeps the last bytes of each stream in a ring and says how many were dropped', async () => {
    const proc = await p.start({ command: 'head -c 5000 /dev/zero | tr "\\0" a; printf END' });
    const done = await p.wait(proc.id);
    expect(done.stdout).toEqual({ size: 5003, dropped: 5003 - 1024 });
    const out = await p.output(proc.id);
    expect(out.stdout).toMatchObject({ offset: 5003 - 1024, skipped: 5003 - 1024, nextOffset: 5003 });
    expect(out.stdout.data).toBe(`${'a'.repeat(1021)}END`);
    await p.remove(proc.id);
  });

  it('reports a slow follower what it skipped', async () => {
    const proc = await p.start({ command: 'printf %2000s x' });
    await p.wait(proc.id);
    const res = await agent.send({ method: 'GET', path: `/v1/processes/${proc.id}/output/stream` });
    const events = res.body
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events[0]).toMatchObject({ type: 'stdout', offset: 2000 - 1024, skipped: 2000 - 1024 });
    await p.remove(proc.id);
  });

  it('holds at most maxProcesses (running or exited) and answers 409 too-many-processes beyond', async () => {
    const a = await p.start({ command: `sleep ${uniqueSleepSeconds()}` });
    const b = await p.start({ command: 'true' });
    await p.wait(b.id);
    const refused = await p.call('POST', '/v1/processes', { command: 'true' });
    expect(refused.status).toBe(409);
    expect(problemOf(refused)).toMatchObject({
      type: 'https://sandbox.dev/problems/too-many-processes',
      detail:
        'the agent holds 2 processes, its maximum (1 exited: remove them with DELETE /v1/processes/<id>)',
    });
    await p.remove(b.id);
    const c = await p.start({ command: 'true' });
    await p.wait(c.id);
    await p.remove(c.id);
    await p.signal(a.id, 'SIGKILL');
    await p.wait(a.id);
    await p.remove(a.id);
  });
});

describe('process table', () => {
  it('sees whether a process group has members left (the removal scans /proc only then)', async () => {
    const child = spawn('/bin/sh', ['-c', 'sleep 0.3'], { detached: true, stdio: 'ignore' });
    const pgid = child.pid!;
    expect(groupExists(pgid)).toBe(true);
    await new Promise((resolve) => child.once('exit', resolve));
    expect(groupExists(pgid)).toBe(false);
  });

  it('counts starts in flight against the cap (concurrent starts cannot overshoot it)', async () => {
    const table = new ProcessTable({
      bashPath: 'bash',
      workspace: tmpdir(),
      env: { PATH: process.env.PATH },
      sessionEnv: {},
      maxProcesses: 2,
      outputBytes: 1024,
      logger: createLogger('silent'),
    });
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 6 }, () => table.start({ command: `sleep ${uniqueSleepSeconds()}` })),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(refused).toHaveLength(4);
      for (const r of refused) expect(r.reason).toMatchObject({ slug: 'too-many-processes' });
    } finally {
      await table.close();
    }
  });
});

describe('background processes end with the agent', () => {
  it('stops every process when the agent stops (SIGTERM, then SIGKILL)', async () => {
    const agent = await TestAgent.start();
    const plain = uniqueSleepSeconds();
    const stubborn = uniqueSleepSeconds();
    try {
      const p = api(agent);
      await p.start({ command: `sleep ${plain}` });
      await p.start({ command: `trap '' TERM; sleep ${stubborn}` });
      expect((await processesMatching(`sleep ${plain}`)).length).toBeGreaterThan(0);
    } finally {
      await agent.stop();
    }
    expect(await processesMatching(`sleep ${plain}`)).toEqual([]);
    await eventually(
      'the stubborn one is killed too',
      async () => (await processesMatching(`sleep ${stubborn}`)).length === 0,
    );
  });
});
