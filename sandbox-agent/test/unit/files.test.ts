/** PUT/GET /v1/files: atomic writes under the workspace, size limit, traversal refused. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

import { problemOf, TestAgent } from './helpers/test-agent.js';

describe('/v1/files', () => {
  let agent: TestAgent;
  /** A directory outside the workspace that write attempts target (never /etc: tests may run as root). */
  let outside: string;
  const limit = 64 * 1024;

  beforeAll(async () => {
    agent = await TestAgent.start({ fileMaxBytes: limit });
    outside = await mkdtemp(join(tmpdir(), 'sbx-outside-'));
    await symlink(outside, join(agent.workspace, 'out-link'));
    await symlink('/etc', join(agent.workspace, 'etc-link'));
    await symlink('/etc/hostname', join(agent.workspace, 'hostname-link'));
    await mkdir(join(agent.workspace, 'inside'));
    await writeFile(join(agent.workspace, 'inside', 'target.txt'), 'through a link');
    await symlink('inside/target.txt', join(agent.workspace, 'ok-link'));
  });
  afterAll(async () => {
    await agent.stop();
    await rm(outside, { recursive: true, force: true });
  });

  const put = (path: string, body: Buffer | string) => agent.send({ method: 'PUT', path, body });
  const get = (path: string) => agent.send({ method: 'GET', path });

  it('writes a file (creating parent directories) and reads the same bytes back', async () => {
    const bytes = randomBytes(50_000);
    const res = await put('/v1/files/deep/er/data.bin', bytes);
    expect(res.status).toBe(201);
    expect(JSON.parse(res.body.toString())).toEqual({ path: 'deep/er/data.bin', size: 50_000 });
    expect(await readFile(join(agent.workspace, 'deep/er/data.bin'))).toEqual(bytes);
    const back = await get('/v1/files/deep/er/data.bin');
    expect(back.status).toBe(200);
    expect(back.headers['content-type']).toBe('application/octet-stream');
    expect(back.headers['content-length']).toBe('50000');
    expect(back.body).toEqual(bytes);
  });

  it('replaces an existing file atomically and leaves no temp file behind', async () => {
    await put('/v1/files/replace.txt', 'old');
    expect((await put('/v1/files/replace.txt', 'new content')).status).toBe(201);
    expect((await get('/v1/files/replace.txt')).body.toString()).toBe('new content');
    expect((await readdir(agent.workspace)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('writes an empty file and accepts percent-encoded names', async () => {
    expect((await put('/v1/files/empty', '')).status).toBe(201);
    expect((await get('/v1/files/empty')).body).toHaveLength(0);
    expect((await put('/v1/files/with%20space%20%C3%A9.txt', 'x')).status).toBe(201);
    expect(await readFile(join(agent.workspace, 'with space é.txt'), 'utf8')).toBe('x');
  });

  it('makes files written by PUT visible to commands, and the reverse', async () => {
    await put('/v1/files/from-api.txt', 'api');
    expect(await agent.sh('cat from-api.txt; echo -n shell > from-shell.txt')).toBe('api');
    expect((await get('/v1/files/from-shell.txt')).body.toString()).toBe('shell');
  });

  it('refuses a file over the size limit with 413 and leaves nothing behind', async () => {
    const res = await put('/v1/files/too-big.bin', randomBytes(limit + 1));
    expect(res.status).toBe(413);
    expect(problemOf(res)).toMatchObject({
      type: 'https://sandbox.dev/problems/payload-too-large',
      status: 413,
    });
    const names = await readdir(agent.workspace);
    expect(names.filter((f) => f.includes('too-big'))).toEqual([]);
  });

  it('refuses a chunked upload that grows over the limit with 413 and leaves nothing behind', async () => {
    const res = await agent.send({
      method: 'PUT',
      path: '/v1/files/chunked.bin',
      headers: { 'transfer-encoding': 'chunked' },
      body: randomBytes(limit * 2),
    });
    expect(res.status).toBe(413);
    expect((await readdir(agent.workspace)).filter((f) => f.includes('chunked'))).toEqual([]);
  });

  it('answers 413 to large uploads on a reused keep-alive connection, which stays usable', async () => {
    // Regression: stopping to read an over-limit body left it unread, stalling the connection.
    const chunked = await agent.send({
      method: 'PUT',
      path: '/v1/files/big-chunked.bin',
      headers: { 'transfer-encoding': 'chunked' },
      body: Buffer.alloc(4 * 1024 * 1024),
    });
    expect(chunked.status).toBe(413);
    const declared = await put('/v1/files/big-declared.bin', Buffer.alloc(32 * 1024 * 1024));
    expect(declared.status).toBe(413);
    const next = await put('/v1/files/small.txt', 'fits');
    expect(next.status).toBe(201);
    expect([chunked, declared, next].some((r) => r.reusedSocket)).toBe(true);
  }, 30_000);

  it.each([
    ['../ traversal', '/v1/files/../outside.txt'],
    ['nested ../ traversal', '/v1/files/inside/../../outside.txt'],
    ['percent-encoded ..', '/v1/files/%2e%2e/outside.txt'],
    ['encoded slash and ..', '/v1/files/inside%2f..%2f..%2foutside.txt'],
    ['absolute path', '/v1/files//etc/passwd'],
    ['encoded absolute path', '/v1/files/%2Fetc%2Fpasswd'],
    ['NUL byte', '/v1/files/a%00b'],
    ['symlinked directory to /etc', '/v1/files/etc-link/hostname'],
    ['symlink to a file in /etc', '/v1/files/hostname-link'],
  ])('refuses GET through %s with 403', async (_name, path) => {
    const res = await get(path);
    expect(res.status).toBe(403);
    expect(problemOf(res)).toMatchObject({
      type: 'https://sandbox.dev/problems/path-forbidden',
      status: 403,
    });
  });

  it('refuses PUT through ../, absolute paths and symlinks with 403 and writes nothing', async () => {
    const name = basename(outside);
    const attempts = [
      `/v1/files/../${name}/dotdot.txt`,
      `/v1/files/%2e%2e/${name}/encoded.txt`,
      `/v1/files/${outside}/absolute.txt`,
      '/v1/files/out-link/planted.txt',
      '/v1/files/out-link/newdir/planted.txt',
    ];
    for (const path of attempts) {
      const res = await put(path, 'planted');
      expect({ path, status: res.status }).toEqual({ path, status: 403 });
    }
    expect(await readdir(outside)).toEqual([]);
  });

  it('follows symlinks that stay inside the workspace', async () => {
    expect((await get('/v1/files/ok-link')).body.toString()).toBe('through a link');
  });

  it('replaces a symlink on PUT instead of writing through it', async () => {
    await symlink('/etc/hostname', join(agent.workspace, 'replace-link'));
    expect((await put('/v1/files/replace-link', 'mine')).status).toBe(201);
    expect(await readFile(join(agent.workspace, 'replace-link'), 'utf8')).toBe('mine');
    expect(await readFile('/etc/hostname', 'utf8')).not.toBe('mine');
  });

  it('answers 404 for a missing file and 400 for a directory or the workspace itself', async () => {
    expect(problemOf(await get('/v1/files/nope.txt')).status).toBe(404);
    expect(problemOf(await get('/v1/files/inside')).status).toBe(400);
    expect(problemOf(await get('/v1/files/')).status).toBe(400);
    expect(problemOf(await put('/v1/files/inside', 'x')).status).toBe(400);
    expect(problemOf(await put('/v1/files/inside/target.txt/below', 'x')).status).toBe(400);
  });
});
