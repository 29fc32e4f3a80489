/** POST /v1/exec/stream: NDJSON chunks as they come, then the exit event; disconnects cancel. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { request } from 'node:http';

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

interface TimedEvent {
  at: number;
  event: StreamEvent;
}

/** Streams a command, recording when each NDJSON line arrived. */
function stream(
  agent: TestAgent,
  body: object,
): Promise<{ status: number; type?: string; events: TimedEvent[] }> {
  const started = Date.now();
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
        const events: TimedEvent[] = [];
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          buffered += text;
          for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
            events.push({
              at: Date.now() - started,
              event: JSON.parse(buffered.slice(0, nl)) as StreamEvent,
            });
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
    const res = await stream(agent, { command: 'echo first; sleep 1; echo second >&2; exit 3' });
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/x-ndjson');
    const events = res.events.map((e) => e.event);
    expect(events).toEqual([
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
    const [first, , exit] = res.events;
    // The first chunk arrived well before the command ended: it was not buffered to the end.
    expect(exit!.at - first!.at).toBeGreaterThanOrEqual(700);
  });

  it('streams binary chunks as base64 and caps the output with the flag', async () => {
    const res = await stream(agent, {
      command: "printf '\\xff\\x00'; sleep 0.2; head -c 10000 /dev/zero | tr '\\0' z",
    });
    const events = res.events.map((e) => e.event);
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
    const stdout = res.events.filter((e) => e.event.type === 'stdout').map((e) => e.event);
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
    const started = Date.now();
    expect(await agent.sh('echo free')).toBe('free\n');
    expect(Date.now() - started).toBeLessThan(2000);
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
