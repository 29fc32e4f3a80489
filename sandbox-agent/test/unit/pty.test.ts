/**
 * GET /v1/pty: an interactive bash on a real pseudo-terminal (the sandbox-pty helper compiled from
 * its C source with the host's gcc) over a WebSocket: size, resize, exit status, hangup, bounds,
 * and problems before the upgrade.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PassThrough } from 'node:stream';

import { Terminal } from '../../src/pty/terminal.js';
import { OUTPUT_HIGH_WATER, pipeOutput } from '../../src/pty/terminals.js';
import { buildPtyHelper, PtyClient, RefusedUpgrade } from './helpers/pty-client.js';
import { eventually, processesMatching, TestAgent, uniqueSleepSeconds } from './helpers/test-agent.js';

let helper: string;

beforeAll(async () => {
  helper = await buildPtyHelper();
}, 60_000);
afterAll(async () => {
  await rm(dirname(helper), { recursive: true, force: true });
});

/**
 * `stty size` as the terminal reports it. Markers are always computed by the shell (`$(...)`,
 * `$((...))`): the terminal echoes what is typed, so a literal marker would match at once.
 */
async function sttySize(pty: PtyClient, tag: string): Promise<string> {
  pty.type(`echo "${tag}:$(stty size):${tag}"\r`);
  const pattern = new RegExp(`${tag}:(\\d+ \\d+):${tag}`);
  await pty.until(`stty size (${tag})`, () => pattern.test(pty.output));
  return pattern.exec(pty.output)?.[1] ?? '';
}

async function refusal(open: Promise<PtyClient>): Promise<RefusedUpgrade> {
  try {
    const pty = await open;
    pty.ws.terminate();
  } catch (err) {
    if (err instanceof RefusedUpgrade) return err;
    throw err;
  }
  throw new Error('the upgrade was accepted');
}

describe('terminal over WebSocket', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start({
      ptyHelperPath: helper,
      sessionEnv: { SESSION_VAR: 'from-session' },
      maxTerminals: 2,
      // Upgraded connections are the terminal's: the HTTP receive timeouts must not cut them.
      requestTimeoutMs: 1000,
      headersTimeoutMs: 1000,
    });
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('runs bash -i at 80x24, resizes it, and reports `exit 3` as exit status 3', async () => {
    const pty = await PtyClient.open(agent);
    expect(await sttySize(pty, 'A')).toBe('24 80');
    pty.control({ type: 'resize', cols: 100, rows: 30 });
    expect(await sttySize(pty, 'B')).toBe('30 100');
    pty.type('exit 3\r');
    expect(await pty.closed).toEqual({ code: 1000, reason: 'exited' });
    expect(pty.texts.map((t) => JSON.parse(t) as unknown)).toEqual([{ type: 'exit', exitCode: 3 }]);
  });

  it('opens at the requested size and directory, with the session env and a terminal type', async () => {
    await agent.sh('mkdir -p here/there');
    const pty = await PtyClient.open(agent, '?cols=120&rows=40&cwd=here/there');
    expect(await sttySize(pty, 'C')).toBe('40 120');
    pty.type('echo "D:$SESSION_VAR:$TERM:$(pwd):$(tty >/dev/null && echo tty):D"\r');
    await pty.until('the echo', () => /D:from-session:xterm-256color:.*here\/there:tty:D/.test(pty.output));
    pty.type('exit\r');
    await pty.closed;
    expect(JSON.parse(pty.texts[0] ?? '{}')).toEqual({ type: 'exit', exitCode: 0 });
  });

  it('reports a shell killed by a signal with its signal', async () => {
    const pty = await PtyClient.open(agent);
    pty.type('kill -9 $$\r');
    await pty.closed;
    expect(JSON.parse(pty.texts[0] ?? '{}')).toEqual({ type: 'exit', exitCode: 137, signal: 'SIGKILL' });
  });

  it('stays open beyond the HTTP request timeout', async () => {
    const pty = await PtyClient.open(agent);
    await new Promise((r) => setTimeout(r, 2500)); // longer than requestTimeoutMs and the check period
    pty.type('echo "E:$((6*7)):E"\r');
    await pty.until('the echo', () => pty.output.includes('E:42:E'));
    pty.type('exit\r');
    await pty.closed;
  });

  it('delivers large output completely (reading paused and resumed as the client takes it)', async () => {
    const pty = await PtyClient.open(agent);
    pty.type('stty -echo; head -c 3000000 /dev/zero | tr "\\0" x; echo; echo "F:$((6*7)):F"\r');
    await pty.until('all output', () => pty.output.includes('F:42:F'), 30_000);
    expect(pty.output.split('x').length - 1).toBeGreaterThanOrEqual(3_000_000);
    pty.type('exit\r');
    await pty.closed;
  }, 40_000);

  it('takes large input in pieces (the connection pauses while the terminal is full)', async () => {
    const pty = await PtyClient.open(agent);
    pty.type(
      'stty raw -echo; echo "G0:$((6*7)):G0"; head -c 1000000 >/dev/null; stty sane; echo "G:$((6*7)):G"\r',
    );
    await pty.until('raw mode', () => pty.output.includes('G0:42:G0'));
    for (let i = 0; i < 16; i++) pty.type('y'.repeat(62_500));
    await pty.until('the input consumed', () => pty.output.includes('G:42:G'), 30_000);
    pty.type('exit\r');
    await pty.closed;
  }, 40_000);

  it('hangs the terminal up when the client leaves, and kills what it left running', async () => {
    const marker = uniqueSleepSeconds();
    const pty = await PtyClient.open(agent);
    // nohup: the job ignores the hangup; only the agent's kill of the terminal's session ends it.
    pty.type(`nohup sleep ${marker} >/dev/null 2>&1 & echo "H:$((6*7)):H"\r`);
    await pty.until('the job', () => pty.output.includes('H:42:H'));
    expect((await processesMatching(`sleep ${marker}`)).length).toBe(1);
    pty.ws.terminate();
    await eventually(
      'the job is gone',
      async () => (await processesMatching(`sleep ${marker}`)).length === 0,
      8000,
    );
  });

  it('closes with 1008 on an invalid control message, and frees the terminal', async () => {
    const pty = await PtyClient.open(agent);
    pty.control({ type: 'resize', cols: 0, rows: 10 });
    expect(await pty.closed).toEqual({ code: 1008, reason: 'cols must be >= 1' });
    const other = await PtyClient.open(agent);
    other.ws.send('not json');
    expect(await other.closed).toEqual({
      code: 1008,
      reason: 'a text message must be a JSON control message',
    });
    await eventually('the terminals are freed', async () => {
      try {
        const again = await PtyClient.open(agent);
        again.type('exit\r');
        await again.closed;
        return true;
      } catch {
        return false;
      }
    });
  });

  it('closes with 1009 on a client message over 64 KiB', async () => {
    const pty = await PtyClient.open(agent);
    pty.ws.send(Buffer.alloc(64 * 1024 + 1, 0x61), { binary: true });
    expect((await pty.closed).code).toBe(1009);
  });

  it('answers 409 too-many-terminals beyond maxTerminals', async () => {
    // Terminals of earlier tests are released once their shells have ended: retry until both open.
    let a: PtyClient | undefined;
    let b: PtyClient | undefined;
    await eventually('two terminals open', async () => {
      a ??= await PtyClient.open(agent).catch(() => undefined);
      b ??= await PtyClient.open(agent).catch(() => undefined);
      return a !== undefined && b !== undefined;
    });
    if (!a || !b) throw new Error('unreachable');
    const refused = await refusal(PtyClient.open(agent));
    expect(refused.status).toBe(409);
    expect(refused.contentType).toBe('application/problem+json');
    expect(JSON.parse(refused.body)).toEqual({
      type: 'https://sandbox.dev/problems/too-many-terminals',
      title: 'Too many terminals',
      status: 409,
      detail: '2 terminals are open, the maximum',
    });
    a.type('exit\r');
    b.type('exit\r');
    await Promise.all([a.closed, b.closed]);
  });

  it.each([
    ['cols=0', '?cols=0', 'cols must be >= 1'],
    ['rows over the maximum', '?rows=1001', 'rows must be <= 1000'],
    ['an unknown parameter', '?shell=zsh', 'unknown parameter: shell'],
    ['a non-integer size', '?cols=80x', 'cols must be an integer'],
  ])('answers 400 invalid-request before upgrading for %s', async (_name, query, detail) => {
    const refused = await refusal(PtyClient.open(agent, query));
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body)).toMatchObject({
      type: 'https://sandbox.dev/problems/invalid-request',
      detail,
    });
  });

  it('answers 401 without the token and 404 for another WebSocket path', async () => {
    const unauthorized = await refusal(PtyClient.open(agent, '', 'x'.repeat(64)));
    expect(unauthorized.status).toBe(401);
    expect(JSON.parse(unauthorized.body)).toMatchObject({
      type: 'https://sandbox.dev/problems/unauthorized',
    });
    const other = await refusal(PtyClient.open(agent, '', agent.token, '/v1/exec'));
    expect(other.status).toBe(404);
    expect(JSON.parse(other.body)).toMatchObject({ type: 'https://sandbox.dev/problems/not-found' });
  });

  it('answers 426 upgrade-required to a plain GET /v1/pty', async () => {
    const res = await agent.send({ method: 'GET', path: '/v1/pty' });
    expect(res.status).toBe(426);
    expect(res.headers.upgrade).toBe('websocket');
    expect(JSON.parse(res.body.toString())).toMatchObject({
      type: 'https://sandbox.dev/problems/upgrade-required',
    });
  });
});

describe('terminal availability', () => {
  it('answers 503 pty-unavailable when the helper is missing; the rest of the agent works', async () => {
    const agent = await TestAgent.start({ ptyHelperPath: '/nonexistent/sandbox-pty' });
    try {
      const refused = await refusal(PtyClient.open(agent));
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body)).toMatchObject({
        type: 'https://sandbox.dev/problems/pty-unavailable',
      });
      expect(await agent.sh('echo ok')).toBe('ok\n');
    } finally {
      await agent.stop();
    }
  });

  it('closes open terminals with 1001 when the agent stops, leaving nothing behind', async () => {
    const agent = await TestAgent.start({ ptyHelperPath: helper });
    const marker = uniqueSleepSeconds();
    let pty: PtyClient;
    try {
      pty = await PtyClient.open(agent);
      pty.type(`nohup sleep ${marker} >/dev/null 2>&1 & echo "I:$((6*7)):I"\r`);
      await pty.until('the job', () => pty.output.includes('I:42:I'));
    } finally {
      await agent.stop();
    }
    expect((await pty.closed).code).toBe(1001);
    await eventually(
      'the job is gone',
      async () => (await processesMatching(`sleep ${marker}`)).length === 0,
      8000,
    );
  });
});

describe('terminal output bound', () => {
  it('pauses reading the terminal while more than the high water mark waits to be sent', () => {
    const output = new PassThrough();
    const sent: Array<() => void> = [];
    pipeOutput({ output }, { readyState: 1, OPEN: 1, send: (_d, _o, cb) => sent.push(() => cb()) });
    const chunk = Buffer.alloc(64 * 1024);
    for (let i = 0; i * chunk.length <= OUTPUT_HIGH_WATER; i++) output.write(chunk);
    expect(output.isPaused()).toBe(true);
    for (const done of sent.splice(0)) done();
    expect(output.isPaused()).toBe(false);
  });
});

describe('a terminal whose shell is slow to start', () => {
  let agent: TestAgent;
  const start = Terminal.start.bind(Terminal);

  beforeAll(async () => {
    // Under gVisor on a busy node the helper's spawn took seconds; here the start is delayed by
    // 1 s, so what the client sends at once arrives before the terminal exists.
    Terminal.start = async (spec) => {
      await new Promise((r) => setTimeout(r, 1000));
      return start(spec);
    };
    agent = await TestAgent.start({ ptyHelperPath: helper });
  });
  afterAll(async () => {
    Terminal.start = start;
    await agent.stop();
  });

  it('keeps what the client typed and sent before the shell started', async () => {
    const pty = await PtyClient.open(agent, '?cols=91&rows=21');
    pty.control({ type: 'resize', cols: 92, rows: 22 });
    pty.type('echo "E:$(stty size):E"\r');
    await pty.until('the early line', () => /E:22 92:E/.test(pty.output));
    pty.type('exit 5\r');
    expect(await pty.closed).toEqual({ code: 1000, reason: 'exited' });
  });
});
