/** POST /v1/exec/stream: NDJSON chunks as they come, then the exit event; disconnects cancel. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';

import { eventually, processesMatching, TestAgent, uniqueSleepSeconds } from './helpers/test-agent.js';

interface StreamEvent {
  type: 'stdout' | 'stderr' | 'exit';
  data?: string;
  encoding?: string;
  exitCode?: number;
  truncated?: boolean;
  timedOut?: boolean;
  shellReset?: boolean;
  durationMs?: number;
}

/** Streams a command; `onEvent` sees each NDJSON line as it arrives. */
function stream(
  agent: TestAgent,
  body: object,
  onEvent: (event: StreamEvent) => void = () => undefined,
): Promise<{ status: number; type?: string; events: StreamEvent[] }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: agent.running.port,
        method: 'POST',
        path: '/v1/exec/stream',
        headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
      },
      (res) => {
        const events: StreamEvent[] = [];
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          buffered += text;
          for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
            const event = JSON.parse(buffered.slice(0, nl)) as StreamEvent;
            events.push(event);
            onEvent(event);
            buffered = buffered.slice(nl + 1);
          }
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], events }),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('POST /v1/exec/stream', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start({ outputCapBytes: 4096 });
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('emits chunks while the command runs, then the exit event last', async () => {
    // The command goes on only once the test has seen its first chunk: a stream buffered to the
    // end would never show it (the command then times out, without 'second').
    const release = join(agent.workspace, 'release');
    const seen: string[] = [];
    const res = await stream(
      agent,
      {
        command: 'echo first; while [ ! -e release ]; do sleep 0.05; done; echo second >&2; exit 3',
        timeoutSeconds: 5,
      },
      (event) => {
        seen.push(event.type);
        if (event.type === 'stdout') {
          writeFileSync(release, '');
          seen.push('released');
        }
      },
    );
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/x-ndjson');
    expect(seen).toEqual(['stdout', 'released', 'stderr', 'exit']);
    expect(res.events).toEqual([
      { type: 'stdout', data: 'first\n', encoding: 'utf-8' },
      { type: 'stderr', data: 'second\n', encoding: 'utf-8' },
      expect.objectContaining({
        type: 'exit',
        exitCode: 3,
        truncated: false,
        timedOut: false,
        shellReset: false,
      }),
    ]);
  });

  it('streams binary chunks as base64 and caps the output with the flag', async () => {
    const res = await stream(agent, {
      command: "printf '\\xff\\x00'; sleep 0.2; head -c 10000 /dev/zero | tr '\\0' z",
    });
    const events = res.events;
    expect(events[0]).toEqual({
      type: 'stdout',
      data: Buffer.from([0xff, 0]).toString('base64'),
      encoding: 'base64',
    });
    const text = events
      .slice(1)
      .filter((e) => e.type === 'stdout')
      .map((e) => e.data)
      .join('');
    expect(text).toBe('z'.repeat(4096 - 2));
    expect(events.at(-1)).toMatchObject({ type: 'exit', truncated: true, exitCode: 0 });
  });

  it('keeps a multi-byte character split across chunks as UTF-8', async () => {
    const res = await stream(agent, { command: "printf '\\xe2\\x9c'; sleep 0.2; printf '\\x93 done'" });
    const stdout = res.events.filter((e) => e.type === 'stdout');
    expect(stdout.every((e) => e.encoding === 'utf-8')).toBe(true);
    expect(stdout.map((e) => e.data).join('')).toBe('✓ done');
  });

  it('kills the command when the client disconnects, and the shell is not wedged', async () => {
    const secs = uniqueSleepSeconds();
    await new Promise<void>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: agent.running.port,
          method: 'POST',
          path: '/v1/exec/stream',
          headers: { authorization: `Bearer ${agent.token}` },
        },
        (res) => {
          res.once('data', () => {
            req.destroy(); // hang up after the first chunk
            resolve();
          });
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
      req.end(JSON.stringify({ command: `echo started; sleep ${secs}; echo never` }));
    });
    await eventually(
      'the sleep is killed',
      async () => (await processesMatching(`sleep ${secs}`)).length === 0,
    );
    // The next command runs in the same bash: not stuck behind the killed one, no restart.
    expect(await agent.exec({ command: 'echo free' })).toMatchObject({
      stdout: 'free\n',
      exitCode: 0,
      timedOut: false,
      shellReset: false,
    });
    await eventually('the cancellation is logged', () =>
      Promise.resolve(agent.logs.some((l) => l.includes('"reason":"cancelled"'))),
    );
    expect((await agent.exec({ command: 'true' })).shellReset).toBe(false);
  });

  it('answers 400 before streaming when the request is invalid', async () => {
    const res = await agent.send({ method: 'POST', path: '/v1/exec/stream', body: '{"command": 1}' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
  });
});
