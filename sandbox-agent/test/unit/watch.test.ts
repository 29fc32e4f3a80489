/**
 * GET /v1/watch against the real inotify helper (sandbox-watch, compiled from its C source with
 * the host's gcc): changes arrive in order with workspace-relative paths, renames are paired,
 * recursion follows new directories, paths outside the workspace are refused, a slow client gets
 * an overflow line instead of unbounded memory, and watches end cleanly.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdir, rename, rm, symlink, writeFile, appendFile } from 'node:fs/promises';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { WATCH_QUEUE_MAX_EVENTS } from '@sandbox-platform/api';

import { problemOf, TestAgent } from './helpers/test-agent.js';

jest.setTimeout(60_000);

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), '../../../test-e2e/images/src/sandbox-watch.c');

type Line = Record<string, unknown> & { type: string };

/** An open watch: its lines as they arrive. */
class WatchCall {
  readonly lines: Line[] = [];
  res!: IncomingMessage;
  status = 0;
  body = '';
  private buffered = '';
  private waiters: Array<() => void> = [];

  static open(agent: TestAgent, query: string, read = true): Promise<WatchCall> {
    const call = new WatchCall();
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: agent.running.port,
          path: `/v1/watch?${query}`,
          headers: { authorization: `Bearer ${agent.token}` },
        },
        (res) => {
          call.res = res;
          call.status = res.statusCode ?? 0;
          res.setEncoding('utf8');
          res.on('data', (t: string) => call.take(t));
          res.on('end', () => call.wake());
          // Not reading: the headers are out, and the watching line was written right after them.
          if (!read) {
            res.pause();
            resolve(call);
          } else if (call.status !== 200) res.on('end', () => resolve(call));
          else void call.until((l) => l.some((x) => x.type === 'watching')).then(() => resolve(call));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  private take(text: string): void {
    this.body += text;
    this.buffered += text;
    for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n')) {
      if (this.status === 200) this.lines.push(JSON.parse(this.buffered.slice(0, nl)) as Line);
      this.buffered = this.buffered.slice(nl + 1);
    }
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  async until(done: (lines: Line[]) => boolean, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!done(this.lines)) {
      if (Date.now() > deadline)
        throw new Error(`timed out; lines: ${JSON.stringify(this.lines.slice(-20))}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 100);
      });
    }
  }

  close(): void {
    this.res.destroy();
  }
}

const changes = (lines: Line[]): Line[] =>
  lines.filter((l) => !['watching', 'overflow', 'end'].includes(l.type));

describe('file watching', () => {
  let agent: TestAgent;
  let helperPath: string;

  beforeAll(async () => {
    helperPath = join(tmpdir(), `sandbox-watch-${process.pid}`);
    await promisify(execFile)('gcc', ['-O1', '-Wall', '-Wextra', '-Werror', '-o', helperPath, SOURCE]);
    agent = await TestAgent.start({}, { watch: { helperPath, maxWatches: 4 } });
  });
  afterAll(async () => {
    await agent.stop();
    await rm(helperPath, { force: true });
  });

  it('reports create, modify, rename and delete under the directory in order, recursively', async () => {
    await mkdir(join(agent.workspace, 'w1'));
    const call = await WatchCall.open(agent, 'path=w1&recursive=true');
    expect(call.lines[0]).toEqual({ type: 'watching', path: 'w1', recursive: true });
    const w = (p: string): string => join(agent.workspace, 'w1', p);
    await writeFile(w('a.txt'), 'one');
    await appendFile(w('a.txt'), 'two');
    await rename(w('a.txt'), w('b.txt'));
    await mkdir(w('sub'));
    await call.until((l) => l.some((x) => x.path === 'w1/sub'));
    await writeFile(w('sub/c.txt'), 'x');
    await rm(w('b.txt'));
    await call.until((l) => l.some((x) => x.type === 'delete'));
    const seen = changes(call.lines).map((l) => [l.type, l.path, l.from, l.directory]);
    const expected = [
      ['create', 'w1/a.txt', undefined, false],
      ['modify', 'w1/a.txt', undefined, false],
      ['rename', 'w1/b.txt', 'w1/a.txt', false],
      ['create', 'w1/sub', undefined, true],
      ['create', 'w1/sub/c.txt', undefined, false],
      ['modify', 'w1/sub/c.txt', undefined, false],
      ['delete', 'w1/b.txt', undefined, false],
    ];
    // Consecutive writes may be one modify or two (the kernel merges unread identical events).
    const merged = seen.filter(
      (s, i) => !(s[0] === 'modify' && JSON.stringify(seen[i - 1]) === JSON.stringify(s)),
    );
    expect(merged).toEqual(expected);
    call.close();
  });

  it('without recursive, changes in subdirectories are not reported', async () => {
    await mkdir(join(agent.workspace, 'w2/deep'), { recursive: true });
    const call = await WatchCall.open(agent, 'path=w2');
    await writeFile(join(agent.workspace, 'w2/deep/x'), 'x');
    await writeFile(join(agent.workspace, 'w2/top'), 'x');
    // Its create and modify may come in two reads of the watch (a loaded host): wait for both.
    await call.until((l) => l.filter((x) => x.path === 'w2/top').length >= 2);
    expect(changes(call.lines).map((l) => l.path)).toEqual(['w2/top', 'w2/top']);
    call.close();
  });

  it('SECURITY: refuses to watch outside the workspace (.., absolute, a symlink out), a missing path and a file', async () => {
    await symlink('/etc', join(agent.workspace, 'etc-link'));
    await writeFile(join(agent.workspace, 'plain'), 'x');
    for (const [query, status, slug] of [
      ['path=../', 403, 'path-forbidden'],
      ['path=%2Fetc', 403, 'path-forbidden'],
      ['path=etc-link', 403, 'path-forbidden'],
      ['path=missing', 404, 'not-found'],
      ['path=plain', 400, 'invalid-request'],
      ['path=w1&recursive=yes', 400, 'invalid-request'],
    ] as const) {
      const res = await agent.send({ method: 'GET', path: `/v1/watch?${query}` });
      expect({ query, status: res.status, type: problemOf(res).type }).toEqual({
        query,
        status,
        type: `https://sandbox.dev/problems/${slug}`,
      });
    }
  });

  it('SECURITY: a client that does not read gets an overflow line; the queue is bounded', async () => {
    await mkdir(join(agent.workspace, 'flood'));
    const call = await WatchCall.open(agent, 'path=flood', false);
    // Long names (lines of about 260 bytes): 40,000 lines are more than the socket buffers hold.
    const total = 40_000;
    const long = 'n'.repeat(200);
    for (let i = 0; i < total; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, (_, j) =>
          writeFile(join(agent.workspace, 'flood', `${long}${i + j}`), ''),
        ),
      );
    }
    await new Promise((r) => setTimeout(r, 1000));
    call.res.resume();
    await call.until((l) => l.some((x) => x.type === 'overflow'), 20_000);
    const overflow = call.lines.find((l) => l.type === 'overflow')!;
    expect(overflow.dropped).toBeGreaterThan(0);
    const before = call.lines.indexOf(overflow);
    // What was sent before the overflow: what the socket took plus the bounded queue.
    expect(before).toBeLessThan(total);
    expect(before - 1).toBeGreaterThanOrEqual(WATCH_QUEUE_MAX_EVENTS);
    call.close();
  });

  it('ends with directory-gone when the watched directory is removed', async () => {
    await mkdir(join(agent.workspace, 'gone'));
    const call = await WatchCall.open(agent, 'path=gone');
    await rm(join(agent.workspace, 'gone'), { recursive: true });
    await call.until((l) => l.some((x) => x.type === 'end'));
    expect(call.lines[call.lines.length - 1]).toEqual({ type: 'end', reason: 'directory-gone' });
  });

  it('bounds the open watches, and ends them with agent-stopping when the agent stops', async () => {
    const other = await TestAgent.start({}, { watch: { helperPath, maxWatches: 1 } });
    const call = await WatchCall.open(other, 'path=');
    const refused = await other.send({ method: 'GET', path: '/v1/watch' });
    expect(refused.status).toBe(503);
    expect(problemOf(refused).type).toBe('https://sandbox.dev/problems/watch-unavailable');
    await other.stop();
    await call.until((l) => l.some((x) => x.type === 'end'));
    expect(call.lines[call.lines.length - 1]).toEqual({ type: 'end', reason: 'agent-stopping' });
  });
});
