/**
 * A command writing to bash's copy of the control channel (fd 3, saved by bash while the command
 * runs): the agent treats it as a protocol breach, kills and restarts bash, and stays responsive
 * with bounded memory.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { TestAgent } from './helpers/test-agent.js';

/**
 * Shell text printing the fd number of bash's saved copy of fd 3: a socket the command's stdout
 * and stderr are not, above 9 (bash saves redirected fds there), with the newest socket inode
 * (the agent creates bash's stdin, stdout, stderr and control sockets in that order).
 */
const CONTROL_FD = [
  '$(for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -ge 10 ] || continue; l=$(readlink "$f");',
  'case $l in socket:*) ;; *) continue;; esac;',
  '[ "$l" = "$(readlink /proc/$$/fd/1)" ] || [ "$l" = "$(readlink /proc/$$/fd/2)" ] && continue;',
  'echo "${l//[^0-9]/} $n"; done | sort -n | tail -1 | cut -d" " -f2)',
].join(' ');

describe('control channel written by a command', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await TestAgent.start();
  });
  afterAll(async () => {
    await agent.stop();
  });

  const breaches = (): number =>
    agent.logs.filter((l) => l.includes('control channel protocol breach')).length;

  it('a 32 MiB flood without NUL bytes: bash is killed and restarted, memory stays bounded', async () => {
    const before = breaches();
    const rss = process.memoryUsage().rss;
    let peak = rss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    // 512 writes of 64 KiB by a builtin in the main shell (bash's saved fds are close-on-exec,
    // so only builtins reach them). The deadline is far: the breach, not the timeout, must end it.
    const flood = `fd=${CONTROL_FD}; s=$(printf '%65536s' ''); for i in $(seq 512); do printf '%s' "$s" >&$fd; done; echo unreachable`;
    const res = await agent.exec({ command: `echo before; ${flood}`, timeoutSeconds: 120 });
    clearInterval(sampler);
    expect(res).toMatchObject({ stdout: expect.stringMatching(/^before\n/), exitCode: 137, timedOut: false });
    expect(breaches()).toBe(before + 1);
    // The parser keeps at most one 64 KiB field; without the bound it held (and copied) the flood.
    expect(peak - rss).toBeLessThan(48 * 1024 * 1024);
    const next = await agent.exec({ command: 'echo next' });
    expect(next).toMatchObject({ stdout: 'next\n', exitCode: 0, shellReset: true });
  }, 60_000);

  it('records of the wrong shape (NUL-separated junk) are a breach too, not a stream of warnings', async () => {
    const before = breaches();
    const res = await agent.exec({
      command: `fd=${CONTROL_FD}; for i in $(seq 1000); do printf 'x\\0y\\0z\\0' >&$fd; done; echo unreachable`,
      timeoutSeconds: 120,
    });
    expect(res).toMatchObject({ exitCode: 137, timedOut: false });
    expect(res.stdout).not.toContain('unreachable');
    expect(breaches()).toBe(before + 1);
    expect((await agent.exec({ command: 'echo ok' })).shellReset).toBe(true);
  }, 60_000);

  it('well-formed records of a foreign sentinel: one breach, one kill, however many records', async () => {
    // Regression: each such record was handled on its own (a log line and a /proc kill sweep each).
    const before = breaches();
    const record = `printf '%s\\0%s\\0%s\\0' "__sbx_$(printf %032d 0)__" 0 / >&$fd`;
    const res = await agent.exec({
      command: `fd=${CONTROL_FD}; for i in $(seq 2000); do ${record}; done; echo unreachable`,
      timeoutSeconds: 120,
    });
    expect(res).toMatchObject({ exitCode: 137, timedOut: false });
    expect(breaches()).toBe(before + 1);
    expect((await agent.exec({ command: 'echo ok' })).shellReset).toBe(true);
  }, 60_000);

  it('finds the control fd it writes to (the tests above would pass vacuously otherwise)', async () => {
    const fd = Number((await agent.sh(`echo ${CONTROL_FD}`)).trim());
    expect(fd).toBeGreaterThanOrEqual(10);
  });
});
