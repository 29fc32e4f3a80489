/** POST /v1/exec against a real bash: exit codes, streams, state, encodings, output cap. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { TestAgent } from './helpers/test-agent.js';

describe('POST /v1/exec', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start({ outputCapBytes: 64 * 1024 });
  });
  afterAll(async () => {
    await agent.stop();
  });

  it.each([0, 1, 2, 42, 255])('reports exit status %i', async (code) => {
    const res = await agent.exec({ command: `(exit ${code})` });
    expect(res.exitCode).toBe(code);
    expect(res.timedOut).toBe(false);
  });

  it('reports 128+N for a command killed by signal N', async () => {
    const res = await agent.exec({ command: 'sh -c "kill -TERM \\$\\$"' });
    expect(res.exitCode).toBe(128 + 15);
  });

  it('reports 127 for an unknown command and 2 for a syntax error, and the shell goes on', async () => {
    expect((await agent.exec({ command: 'no-such-command-xyz' })).exitCode).toBe(127);
    const syntax = await agent.exec({ command: 'if then fi (' });
    expect(syntax.exitCode).toBe(2);
    expect(syntax.stderr).toMatch(/syntax error/);
    expect(await agent.sh('echo still here')).toBe('still here\n');
  });

  it('runs a frame read with read -N: the command cannot see the frame text (nor its sentinel)', async () => {
    const res = await agent.exec({
      command: 'echo "[${__sbx_w-unset}][${__sbx_v-unset}][${__sbx_p-unset}]"; echo after',
    });
    expect(res).toMatchObject({ stdout: '[][][]\nafter\n', stderr: '', exitCode: 0 });
  });

  it('keeps frames in step when a command switches to a UTF-8 locale (read -N counts characters)', async () => {
    const locale = (await agent.sh('locale -a 2>/dev/null | grep -iE "^c\\.utf-?8$" | head -n 1')).trim();
    expect(locale).not.toBe('');
    await agent.sh(`export LC_ALL=${locale}`);
    expect(await agent.sh('echo d\u00e9j\u00e0 \u{1f600}')).toBe('d\u00e9j\u00e0 \u{1f600}\n');
    expect((await agent.exec({ command: 'printf %s "$X"', env: { X: '\u00e9\u00e9' } })).stdout).toBe(
      '\u00e9\u00e9',
    );
    await agent.sh('unset LC_ALL');
    expect(await agent.sh('echo in step')).toBe('in step\n');
  });

  it('takes frames of any length around the 1 KiB block, in step', async () => {
    for (const n of [900, 990, 1000, 1010, 1020, 3000, 200_000]) {
      const res = await agent.exec({ command: `x='${'\u00e9'.repeat(n % 7)}${'y'.repeat(n)}'; echo \${#x}` });
      expect(res.stdout).toBe(`${n + (n % 7)}\n`);
    }
    expect(await agent.sh('echo in step')).toBe('in step\n');
  });

  it("has all of a command's stderr, however it interleaves with stdout and however late it comes", async () => {
    const lines = await agent.exec({ command: 'for i in $(seq 300); do echo "o$i"; echo "e$i" >&2; done' });
    expect(lines.stdout.split('\n').filter(Boolean)).toHaveLength(300);
    expect(lines.stderr).toBe(Array.from({ length: 300 }, (_, i) => `e${i + 1}\n`).join(''));
    for (let i = 0; i < 20; i++) {
      const last = await agent.exec({ command: `echo out; printf 'last%s' ${i} >&2` });
      expect(last).toMatchObject({ stdout: 'out\n', stderr: `last${i}` });
    }
    // Just under the output cap, written last, after the stdout marker's write would be too late.
    const big = await agent.exec({ command: 'echo done; head -c 60000 /dev/zero | tr "\\0" e >&2' });
    expect(big.stdout).toBe('done\n');
    expect(big.stderr.length).toBe(60_000);
    expect(/^e*$/.test(big.stderr)).toBe(true);
  });

  it('ends a command at its own break or continue, and the next one runs', async () => {
    expect(await agent.exec({ command: 'echo one; break; echo never' })).toMatchObject({
      stdout: 'one\n',
      exitCode: 0,
    });
    expect(await agent.exec({ command: 'continue; echo never' })).toMatchObject({ stdout: '', exitCode: 0 });
    expect(await agent.sh('echo next')).toBe('next\n');
  });

  it('lets a command use fds 3 to 9 as its own, and puts back a stdin it replaced', async () => {
    const lock = `${agent.workspace}/lock`;
    expect(await agent.sh(`exec 9>${lock} 3<&0 8>&2; echo ok >&9; cat ${lock}`)).toBe('ok\n');
    expect(await agent.sh(`echo again >&9; cat ${lock}; exec 9>&- 3<&- 8>&-`)).toBe('ok\nagain\n');
    await agent.sh(`exec <${lock}`);
    expect(await agent.sh('cat')).toBe('');
  });

  it('reads the next frame after a trapped signal interrupts the wait for it', async () => {
    await agent.sh('trap "echo trapped >>$HOME/trap.log" USR1; (sleep 0.3; kill -USR1 $$) >/dev/null 2>&1 &');
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(await agent.sh('cat $HOME/trap.log; trap - USR1')).toBe('trapped\n');
    expect(await agent.sh('echo after the signal')).toBe('after the signal\n');
  });

  it('starts processes without the protocol, control or saved stdout/stderr fds', async () => {
    // Every fd of the agent's bash is a socket (node's stdio); fds 3-9 are the wrapper's. Other
    // fds the test runner itself inherited (and passes down) are not the agent's business.
    const leaks = (listing: string): string[] =>
      listing
        .split('\n')
        .map((line) => / (\d+) -> (.*)$/.exec(line))
        .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) > 2)
        .filter((m) => Number(m[1]) <= 9 || m[2]!.startsWith('socket:'))
        .map((m) => `${m[1]} -> ${m[2]}`);
    const list = "sh -c 'ls -l /proc/$$/fd'";
    const plain = await agent.sh(list);
    expect(plain).toMatch(/ 2 -> /);
    expect(leaks(plain)).toEqual([]);
    expect(leaks((await agent.exec({ command: list, stdin: 'x' })).stdout)).toEqual([]);
  });

  it('keeps the protocol in step across ASCII and non-ASCII commands, with stdin, cwd and env', async () => {
    const outs: string[] = [];
    for (const command of ['echo one', 'echo d\u00e9j\u00e0', 'printf \'%s\\n\' "$X"', 'cat', 'echo last'])
      outs.push(
        (
          await agent.exec({
            command,
            cwd: '/tmp',
            env: { X: 'x y' },
            stdin: command === 'cat' ? 'in\n' : undefined,
          })
        ).stdout,
      );
    expect(outs).toEqual(['one\n', 'd\u00e9j\u00e0\n', 'x y\n', 'in\n', 'last\n']);
  });

  it('keeps stdout and stderr apart, each in its own order', async () => {
    const res = await agent.exec({ command: 'echo out1; echo err1 >&2; echo out2; echo err2 >&2' });
    expect(res).toMatchObject({ stdout: 'out1\nout2\n', stderr: 'err1\nerr2\n', exitCode: 0 });
    expect(res).toMatchObject({
      stdoutEncoding: 'utf-8',
      stderrEncoding: 'utf-8',
      truncated: false,
      shellReset: false,
    });
    expect(res.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('keeps the working directory and exported variables between calls', async () => {
    await agent.sh('mkdir -p sub/dir && cd sub/dir && export KEEP_ME=kept && PLAIN=plain');
    expect(await agent.sh('pwd; echo $KEEP_ME $PLAIN; env | grep -c ^KEEP_ME=')).toBe(
      `${agent.workspace}/sub/dir\nkept plain\n1\n`,
    );
    await agent.sh(`cd ${agent.workspace}`);
  });

  it('applies a per-call cwd and env to that call only', async () => {
    const res = await agent.exec({
      command: 'pwd; echo "$ONLY_ONCE"; printenv ONLY_ONCE',
      cwd: '/tmp',
      env: { ONLY_ONCE: "it's $here" },
    });
    expect(res.stdout).toBe("/tmp\nit's $here\nit's $here\n");
    expect(await agent.sh('pwd; echo "[$ONLY_ONCE]"')).toBe(`${agent.workspace}\n[]\n`);
  });

  it('keeps a cd made by a command that also had a per-call cwd', async () => {
    await agent.sh('mkdir -p cwd-test/inner');
    await agent.exec({ command: 'cd inner', cwd: 'cwd-test' });
    expect(await agent.sh('pwd')).toBe(`${agent.workspace}/cwd-test/inner\n`);
    await agent.sh(`cd ${agent.workspace}`);
  });

  it('fails like `cd dir && cmd` when the per-call cwd does not exist', async () => {
    const res = await agent.exec({ command: 'echo ran', cwd: '/no/such/dir' });
    expect(res.exitCode).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/No such file or directory/);
  });

  it('returns unicode text as UTF-8', async () => {
    const text = 'héllo wörld ✓ 日本語 😀';
    const res = await agent.exec({ command: `printf '%s\\n' '${text}'; printf '%s' '${text}' >&2` });
    expect(res).toMatchObject({
      stdout: `${text}\n`,
      stderr: text,
      stdoutEncoding: 'utf-8',
      stderrEncoding: 'utf-8',
    });
  });

  it('returns binary output as base64 without corrupting the framing', async () => {
    const res = await agent.exec({ command: "printf '\\x00\\xff\\xfe\\x80abc\\x00'" });
    expect(res.stdoutEncoding).toBe('base64');
    expect(Buffer.from(res.stdout, 'base64')).toEqual(
      Buffer.from([0, 0xff, 0xfe, 0x80, 0x61, 0x62, 0x63, 0]),
    );
    expect(await agent.sh('echo next')).toBe('next\n');
  });

  it('round-trips every byte value', async () => {
    const res = await agent.exec({
      command: 'for i in $(seq 0 255); do printf "\\\\$(printf %03o $i)"; done',
    });
    expect(Buffer.from(res.stdout, 'base64')).toEqual(Buffer.from(Array.from({ length: 256 }, (_, i) => i)));
  });

  it('caps large output, flags it, drains the rest, and keeps the shell usable', async () => {
    const res = await agent.exec({ command: 'head -c 5000000 /dev/zero | tr "\\0" a; echo tail-marker >&2' });
    expect(res.truncated).toBe(true);
    expect(res.stdout).toHaveLength(64 * 1024);
    expect(res.stdout).toMatch(/^a+$/);
    expect(res.stderr).toBe('tail-marker\n');
    expect(res.exitCode).toBe(0);
    expect(await agent.sh('echo ok')).toBe('ok\n');
  });

  it('does not turn UTF-8 text into base64 when the cap cuts a character', async () => {
    // 64 KiB cap; "é" is 2 bytes, and an odd prefix makes the cut fall inside one.
    const res = await agent.exec({ command: 'printf x; for i in $(seq 40000); do printf é; done' });
    expect(res.truncated).toBe(true);
    expect(res.stdoutEncoding).toBe('utf-8');
    expect(Buffer.byteLength(res.stdout)).toBe(64 * 1024 - 1);
  });

  it('gives commands /dev/null as stdin so they cannot eat the protocol', async () => {
    const res = await agent.exec({ command: 'cat; read -r line; echo "read=$? [$line]"' });
    expect(res.stdout).toBe('read=1 []\n');
    expect(await agent.sh('echo alive')).toBe('alive\n');
  });

  it('keeps framing intact under xtrace and when a command redirects the shell output', async () => {
    const traced = await agent.exec({ command: 'set -x; echo traced' });
    expect(traced.stdout).toBe('traced\n');
    expect(traced.stderr).toContain('+ echo traced');
    const next = await agent.exec({ command: 'echo again; set +x' });
    expect(next.stdout).toBe('again\n');
    expect(next.stderr).not.toMatch(/__sbx_/);
    await agent.sh('exec >/dev/null 2>&1; echo hidden');
    expect(await agent.sh('echo visible')).toBe('visible\n');
  });

  it('lets a command print anything, including text that looks like the protocol', async () => {
    const res = await agent.exec({
      command: "printf '__sbx_0123456789abcdef0123456789abcdef__\\0' ; echo done",
    });
    expect(res.stdout).toBe('__sbx_0123456789abcdef0123456789abcdef__\0done\n');
    expect(res.stdoutEncoding).toBe('utf-8');
  });

  it('keeps framing intact when user functions shadow the builtins it uses', async () => {
    await agent.sh(
      'printf() { echo shadow; }; cd() { return 1; }; set() { :; }; test() { return 1; }; exec() { :; }',
    );
    expect(await agent.sh('echo through')).toBe('through\n');
    const res = await agent.exec({ command: 'command pwd; exec >/dev/null', cwd: '/tmp' });
    expect(res.stdout).toBe('/tmp\n');
    expect(await agent.sh('unset -f printf cd set test exec; pwd')).toBe(`${agent.workspace}\n`);
  });

  it('runs multi-line scripts, functions and heredocs', async () => {
    const script = 'greet() {\n  echo "hi $1"\n}\ngreet there\ncat <<EOF\nline one\nEOF\n';
    expect(await agent.sh(script)).toBe('hi there\nline one\n');
    expect(await agent.sh('greet again')).toBe('hi again\n');
  });
});
