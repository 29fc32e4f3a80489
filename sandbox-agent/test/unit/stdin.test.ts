/**
 * stdin: in a JSON exec body (text or base64, then EOF) and streamed as NDJSON lines while the
 * command runs; read progressively with backpressure, bounded, and cleaned up with the command.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';

import { NdjsonCall } from './helpers/ndjson-client.js';
import { problemOf, TestAgent } from './helpers/test-agent.js';

const MIB = 1024 * 1024;

describe('exec stdin', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start();
  });
  afterAll(async () => {
    await agent.stop();
  });

  const post = (body: unknown, path = '/v1/exec') =>
    agent.send({
      method: 'POST',
      path,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('gives cat its stdin as text, then EOF', async () => {
    const res = await agent.exec({ command: 'cat; echo "[eof]"', stdin: 'héllo\nworld' });
    expect(res).toMatchObject({ stdout: 'héllo\nworld[eof]\n', exitCode: 0 });
  });

  it('echoes 1 MiB of binary stdin through cat exactly', async () => {
    const bytes = randomBytes(MIB);
    const res = await agent.exec({
      command: 'cat',
      stdin: bytes.toString('base64'),
      stdinEncoding: 'base64',
    });
    expect(res).toMatchObject({ exitCode: 0, truncated: false, stdoutEncoding: 'base64' });
    expect(Buffer.from(res.stdout, 'base64').equals(bytes)).toBe(true);
  });

  it('counts stdin in python3 and runs a script given to `python3 -`', async () => {
    const counted = await agent.exec({
      command: `python3 -c 'import sys; print(len(sys.stdin.read()))'`,
      stdin: 'x'.repeat(12345),
    });
    expect(counted).toMatchObject({ stdout: '12345\n', exitCode: 0 });
    const script = await agent.exec({
      command: 'python3 -',
      stdin: 'import sys\nprint(6 * 7)\nsys.exit(4)\n',
    });
    expect(script).toMatchObject({ stdout: '42\n', exitCode: 4 });
  });

  it('applies a diff given to patch on stdin', async () => {
    await agent.sh('printf "one\\ntwo\\nthree\\n" > file.txt');
    const diff = [
      '--- file.txt',
      '+++ file.txt',
      '@@ -1,3 +1,3 @@',
      ' one',
      '-two',
      '+TWO',
      ' three',
      '',
    ].join('\n');
    const res = await agent.exec({ command: 'patch -p0', stdin: diff });
    expect(res.exitCode).toBe(0);
    expect(await agent.sh('cat file.txt')).toBe('one\nTWO\nthree\n');
  });

  it('keeps /dev/null as stdin without a stdin field, and shell state across stdin calls', async () => {
    expect(await agent.exec({ command: 'cat; echo "[$?]"' })).toMatchObject({ stdout: '[0]\n' });
    await agent.exec({ command: 'read -r line; export FROM_STDIN="$line"', stdin: 'kept\n' });
    expect(await agent.sh('echo "$FROM_STDIN"')).toBe('kept\n');
  });

  it('sends EOF only once bash holds the FIFO (a long command text delays its open)', async () => {
    // bash reads the script a byte at a time and opens `<fifo` only after the whole line: a 300 KB
    // comment takes a good fraction of a second, long after the agent wrote the stdin bytes.
    const res = await agent.exec({ command: `cat # ${'x'.repeat(300_000)}`, stdin: 'late reader' });
    expect(res).toMatchObject({ stdout: 'late reader', exitCode: 0, timedOut: false });
  });

  it('ends a call whose cwd does not exist without waiting for its stdin to be read', async () => {
    const res = await agent.exec({ command: 'cat', cwd: 'no/such/dir', stdin: 'never read' });
    expect(res).toMatchObject({ exitCode: 1, stdout: '', timedOut: false });
    expect(res.stderr).toMatch(/no\/such\/dir/);
  });

  it('gives stdin to a background job of the command, which gets EOF after the call', async () => {
    await agent.exec({ command: 'cat > from-job.txt &', stdin: 'for the job\n' });
    expect(await agent.sh('wait; cat from-job.txt')).toBe('for the job\n');
  });

  it('gives an empty stdin as immediate EOF', async () => {
    expect(await agent.exec({ command: 'wc -c', stdin: '' })).toMatchObject({ stdout: '0\n', exitCode: 0 });
  });

  it('streams output of a JSON stream request with stdin', async () => {
    const call = NdjsonCall.open(agent, '/v1/exec/stream', 'application/json');
    call.req.end(JSON.stringify({ command: 'tr a-z A-Z', stdin: 'shout\n' }));
    await call.done;
    expect(call.output('stdout').toString()).toBe('SHOUT\n');
    expect(call.events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0 });
  });

  it('removes each stdin pipe when its command ends', async () => {
    const dirs = (await readdir(tmpdir())).filter((d) => d.startsWith('sandbox-agent-'));
    await agent.exec({ command: 'cat >/dev/null', stdin: 'x' });
    await agent.exec({ command: 'true', stdin: 'not read' });
    for (const dir of dirs) {
      const left = await readdir(`${tmpdir()}/${dir}`).catch(() => []);
      expect(left).toEqual([]);
    }
  });

  it.each([
    ['stdinEncoding without stdin', { command: 'cat', stdinEncoding: 'base64' }, /stdinEncoding needs stdin/],
    [
      'stdin that is not base64',
      { command: 'cat', stdin: 'a$b=', stdinEncoding: 'base64' },
      /not valid base64/,
    ],
    [
      'base64 with a missing pad',
      { command: 'cat', stdin: 'aGk', stdinEncoding: 'base64' },
      /not valid base64/,
    ],
    [
      'an unknown stdinEncoding',
      { command: 'cat', stdin: 'x', stdinEncoding: 'hex' },
      /stdinEncoding must be one of/,
    ],
    ['stdin of the wrong type', { command: 'cat', stdin: 5 }, /stdin must be a string/],
  ])('answers 400 invalid-request for %s', async (_name, body, detail) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(problemOf(res)).toMatchObject({ type: 'https://sandbox.dev/problems/invalid-request' });
    expect(problemOf(res).detail).toMatch(detail);
  });
});

describe('exec stdin limits', () => {
  let agent: TestAgent;
  const stdinMaxBytes = 1000;

  beforeAll(async () => {
    agent = await TestAgent.start({ stdinMaxBytes, execBodyMaxBytes: 4096 });
  });
  afterAll(async () => {
    await agent.stop();
  });

  // A connection of its own per call: the queue test needs more calls in flight than the shared pool allows.
  const post = (body: unknown) =>
    agent.send(
      {
        method: 'POST',
        path: '/v1/exec',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      },
      true,
      { ownConnection: true },
    );

  it('takes stdin up to the limit on top of the body limit, and answers 413 beyond', async () => {
    const exact = await post({
      command: 'wc -c',
      stdin: randomBytes(stdinMaxBytes).toString('base64'),
      stdinEncoding: 'base64',
    });
    expect(JSON.parse(exact.body.toString())).toMatchObject({ stdout: `${stdinMaxBytes}\n` });
    const over = await post({ command: 'wc -c', stdin: 'x'.repeat(stdinMaxBytes + 1) });
    expect(over.status).toBe(413);
    expect(problemOf(over)).toMatchObject({
      type: 'https://sandbox.dev/problems/payload-too-large',
      detail: `stdin is ${stdinMaxBytes + 1} bytes, the limit is ${stdinMaxBytes}`,
    });
  });

  it('still answers 413 for a command over the body limit when stdin is small', async () => {
    const res = await post({ command: `echo ${'a'.repeat(4096)}`, stdin: 'x' });
    expect(res.status).toBe(413);
    expect(problemOf(res).detail).toMatch(/without stdin/);
  });

  it('answers 503 when the calls waiting for the shell hold 8 times the stdin limit', async () => {
    const running = agent.exec({ command: 'sleep 4' });
    const queued = Array.from({ length: 8 }, () =>
      post({ command: 'true', stdin: 'x'.repeat(stdinMaxBytes) }),
    );
    // Time for the eight calls to arrive and wait behind the sleep (not a timing assertion).
    await new Promise((r) => setTimeout(r, 1000));
    const refused = await post({ command: 'true', stdin: 'y' });
    expect(refused.status).toBe(503);
    expect(problemOf(refused)).toMatchObject({
      type: 'https://sandbox.dev/problems/shell-unavailable',
      detail: `${8 * stdinMaxBytes} bytes of stdin wait for the shell already (the limit is ${8 * stdinMaxBytes})`,
    });
    expect(refused.headers['retry-after']).toBe('1');
    await running;
    for (const res of await Promise.all(queued)) expect(res.status).toBe(200);
    expect((await post({ command: 'true', stdin: 'y' })).status).toBe(200);
  });
});

describe('exec stdin streamed as NDJSON', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start();
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('reads stdin lines while the command runs: each line answered before the next is sent', async () => {
    const call = NdjsonCall.open(agent);
    await call.send({ command: 'while read -r line; do echo "got $line"; done; echo bye' });
    for (const word of ['one', 'two', 'three']) {
      await call.send({ type: 'stdin', data: `${word}\n` });
      await call.until(`"got ${word}"`, () => call.output('stdout').toString().includes(`got ${word}\n`));
    }
    await call.send({ type: 'close' });
    call.end();
    await call.done;
    expect(call.output('stdout').toString()).toBe('got one\ngot two\ngot three\nbye\n');
    expect(call.events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0, timedOut: false });
    expect(call.events.at(-1)).not.toHaveProperty('stdinError');
  });

  it('echoes 1 MiB of binary stdin sent in base64 lines through cat exactly', async () => {
    const bytes = randomBytes(MIB);
    const call = NdjsonCall.open(agent);
    await call.send({ command: 'cat' });
    for (let at = 0; at < bytes.length; at += 48 * 1024) {
      await call.send({
        type: 'stdin',
        data: bytes.subarray(at, at + 48 * 1024).toString('base64'),
        encoding: 'base64',
      });
    }
    await call.send({ type: 'close' });
    call.end();
    await call.done;
    expect(call.events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0, truncated: false });
    expect(call.output('stdout').equals(bytes)).toBe(true);
  });

  it('closes stdin when the body ends without a close line', async () => {
    const call = NdjsonCall.open(agent);
    await call.send({ command: 'wc -l' });
    await call.raw('{"type":"stdin","data":"a\\nb\\n"}\r\n\n');
    call.end();
    await call.done;
    expect(call.output('stdout').toString()).toBe('2\n');
  });

  it('holds the body back while the command does not read (backpressure), and stops at its end', async () => {
    const call = NdjsonCall.open(agent);
    await call.send({ command: 'sleep 1; echo done' });
    const line = `${JSON.stringify({ type: 'stdin', data: 'x'.repeat(512 * 1024) })}\n`;
    let offered = 0;
    // Offer 64 MiB; with backpressure the agent reads about one pipe buffer, so the client's
    // writes stall after the socket buffers fill and the answer comes first.
    const writing = (async () => {
      while (offered < 64 * MIB && !call.req.destroyed && !call.req.writableEnded) {
        offered += line.length;
        if (!call.req.write(line)) {
          const drained = await Promise.race([
            new Promise<boolean>((r) => call.req.once('drain', () => r(true))),
            call.done.then(() => false),
          ]);
          if (!drained) return;
        }
      }
    })();
    await call.done;
    const written = call.req.socket?.bytesWritten ?? 0;
    call.req.destroy();
    await writing;
    expect(call.output('stdout').toString()).toBe('done\n');
    expect(written).toBeLessThan(32 * MIB);
  });

  it('stops the command and reports stdinError when a stdin line is invalid', async () => {
    const call = NdjsonCall.open(agent);
    await call.send({ command: 'cat' });
    await call.send({ type: 'stdin', data: 'fine\n' });
    await call.until('the first line echoed', () => call.output('stdout').toString() === 'fine\n');
    await call.raw('{"type":"stdin","data":"x","encoding":"base64"}\n');
    call.end();
    await call.done;
    const exit = call.events.at(-1);
    expect(exit).toMatchObject({
      type: 'exit',
      exitCode: 137,
      stdinError: 'line 3: data is not valid base64',
    });
    expect(call.output('stdout').toString()).toBe('fine\n');
  });

  it.each([
    ['a line that is not JSON', 'nope\n', 'line 2 is not valid JSON'],
    ['an unknown line type', '{"type":"eof"}\n', /^line 2: /],
    ['an unknown field', '{"type":"stdin","data":"x","more":1}\n', 'line 2: unknown field: more'],
  ])('reports %s as stdinError', async (_name, text, detail) => {
    const call = NdjsonCall.open(agent);
    await call.send({ command: 'cat >/dev/null' });
    await call.raw(text);
    call.end();
    await call.done;
    expect(call.events.at(-1)?.stdinError).toEqual(
      typeof detail === 'string' ? detail : expect.stringMatching(detail),
    );
  });

  it('kills a command whose stdin never closes at its deadline', async () => {
    const call = NdjsonCall.open(agent);
    await call.send({ command: 'cat', timeoutSeconds: 1 });
    await call.send({ type: 'stdin', data: 'partial' });
    await call.done;
    expect(call.events.at(-1)).toMatchObject({ type: 'exit', exitCode: 124, timedOut: true });
    expect(call.output('stdout').toString()).toBe('partial');
    call.req.destroy();
  });

  it.each([
    ['no request line', '', 400, 'the body has no request line'],
    ['a request line that is not JSON', 'x\n', 400, 'the request line is not valid JSON'],
    [
      'stdin inside the request line',
      '{"command":"cat","stdin":"x"}\n',
      400,
      /stdin comes as \{"type":"stdin"\} lines after the request line/,
    ],
    ['an invalid request line', '{"command":""}\n', 400, 'command must not be empty'],
  ])('answers a problem before streaming for %s', async (_name, body, status, detail) => {
    const call = NdjsonCall.open(agent);
    call.req.end(body);
    const res = await call.response;
    await call.done;
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toBe('application/problem+json');
    const problem = JSON.parse(call.text) as { detail: string };
    expect(problem.detail).toEqual(typeof detail === 'string' ? detail : expect.stringMatching(detail));
  });
});
