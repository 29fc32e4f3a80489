/**
 * Commands that reach for the shell's framing: bash's own copies of stdout and stderr (fds 11
 * and 13, close-on-exec, so only builtins of the main shell reach them) carry output like any
 * other, within the cap; a forged end of output (the sentinel on stdout without the exit status
 * after it) is a framing breach: the agent kills and restarts bash and stays responsive.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { TestAgent } from './helpers/test-agent.js';

/**
 * A DEBUG trap that sees the wrapper's `__sbx_z 'HEAD' 'TAIL'` call (BASH_COMMAND) and writes the
 * sentinel it learns there to bash's copy of stdout, followed by what `format` makes of `args`
 * instead of the wrapper's exit status. It stays set until a command removes it.
 */
const forge = (format: string, args = ''): string =>
  `trap 'case $BASH_COMMAND in "__sbx_z "*) eval "set -- \${BASH_COMMAND#__sbx_z }"; ` +
  `builtin printf "%s%s${format}" "$1" "$2" ${args} >&11;; esac' DEBUG`;

describe('the framing, reached for by a command', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start({ outputCapBytes: 1024 * 1024 });
  });
  afterAll(async () => {
    await agent.stop();
  });

  const breaches = (): number => agent.logs.filter((l) => l.includes('shell framing breach')).length;

  it("writes to bash's copies of stdout and stderr are the command's output, capped", async () => {
    const rss = process.memoryUsage().rss;
    let peak = rss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const flood = `s=$(printf '%65536s' ''); for i in $(seq 512); do printf '%s' "$s" >&13; done; printf out >&11`;
    const res = await agent.exec({ command: flood, timeoutSeconds: 120 });
    clearInterval(sampler);
    expect(res).toMatchObject({ stdout: 'out', exitCode: 0, truncated: true });
    expect(Buffer.byteLength(res.stderr)).toBeLessThanOrEqual(1024 * 1024);
    expect(peak - rss).toBeLessThan(48 * 1024 * 1024);
    expect(await agent.sh('echo next')).toBe('next\n');
  }, 60_000);

  it.each([
    ['junk', 'junk'],
    ['a status of the wrong shape', '\\0abc\\0'],
  ])(
    'a forged end of output with %s after the sentinel: one breach, bash restarted',
    async (_name, format) => {
      const before = breaches();
      const res = await agent.exec({ command: `${forge(format)}; echo forged`, timeoutSeconds: 60 });
      expect(res).toMatchObject({ stdout: 'forged\n', exitCode: 137, timedOut: false });
      expect(breaches()).toBe(before + 1);
      const next = await agent.exec({ command: 'echo next' });
      expect(next).toMatchObject({ stdout: 'next\n', exitCode: 0, shellReset: true });
    },
    60_000,
  );

  it('a forged end of output with a well-formed status is taken (the tenant lies only to itself)', async () => {
    const before = breaches();
    const res = await agent.exec({ command: `${forge('\\0%s\\0', '42')}; echo forged` });
    expect(res).toMatchObject({ stdout: 'forged\n', exitCode: 42 });
    expect(breaches()).toBe(before);
    // The real end of output of the forged command comes after it completed: it may land in the
    // next command's stdout (the tenant's own); the shell goes on.
    expect(await agent.sh('trap - DEBUG; echo next')).toMatch(/next\n$/);
    expect(await agent.sh('echo after')).toBe('after\n');
  });
});
