/**
 * GET/PUT /v1/archive and GET /v1/archive/digest (docs/snapshots.md) between two real agents: a
 * workspace with text, a binary, empty directories, symlinks (one pointing outside the workspace),
 * modes and mtimes goes out of one and into the other with the same digest, content, modes, links
 * and mtimes; a wrong digest, a malformed archive or too many bytes leave the target empty; the
 * outside target of a symlink is never read or written; one archive call at a time.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rm,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ARCHIVE_SUMMARY_TRAILER, type ArchiveSummary } from '@sandbox-platform/api';

import { problemOf, TestAgent } from './helpers/test-agent.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  trailers: NodeJS.Dict<string>;
}

function call(agent: TestAgent, method: string, path: string, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: agent.running.port,
        method,
        path,
        agent: false,
        headers: {
          authorization: `Bearer ${agent.token}`,
          ...(body ? { 'content-type': 'application/x-tar', 'content-length': body.length } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            trailers: res.trailers,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Everything under a directory: type, mode, size, content hash, link target, mtime (ms). */
async function describeTree(root: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(join(root, rel))).sort()) {
    const path = rel ? `${rel}/${name}` : name;
    const info = await lstat(join(root, path));
    const mode = (info.mode & 0o7777).toString(8);
    const mtime = Math.round(info.mtimeMs);
    if (info.isSymbolicLink()) out.push(`l ${path} -> ${await readlink(join(root, path))} ${mtime}`);
    else if (info.isDirectory()) {
      out.push(`d ${path} ${mode} ${mtime}`);
      out.push(...(await describeTree(root, path)));
    } else {
      const hash = createHash('sha256')
        .update(await readFile(join(root, path)))
        .digest('hex');
      out.push(`f ${path} ${mode} ${info.size} ${hash} ${mtime}`);
    }
  }
  return out;
}

describe('/v1/archive', () => {
  let source: TestAgent;
  let target: TestAgent;
  let outside: string;
  let archive: Buffer;
  let summary: ArchiveSummary;

  beforeAll(async () => {
    source = await TestAgent.start();
    target = await TestAgent.start();
    outside = await mkdtemp(join(tmpdir(), 'sbx-outside-'));
    await writeFile(join(outside, 'secret.txt'), 'outside the workspace');
    const ws = source.workspace;
    await mkdir(join(ws, 'src/lib'), { recursive: true });
    await writeFile(join(ws, 'src/lib/a.txt'), 'alpha\n');
    await writeFile(join(ws, 'src/run.sh'), '#!/bin/sh\necho hi\n');
    await chmod(join(ws, 'src/run.sh'), 0o755);
    await writeFile(join(ws, 'blob.bin'), randomBytes(3 * 1024 * 1024 + 17));
    await writeFile(join(ws, 'ro.txt'), 'read only');
    await chmod(join(ws, 'ro.txt'), 0o444);
    await mkdir(join(ws, 'empty/deeper'), { recursive: true });
    await mkdir(join(ws, 'locked'));
    await writeFile(join(ws, 'locked/inside.txt'), 'in a read-only directory');
    await chmod(join(ws, 'locked'), 0o555);
    await symlink(join(outside, 'secret.txt'), join(ws, 'escape'));
    await symlink('src/lib', join(ws, 'lib-link'));
    await symlink('does/not/exist', join(ws, 'dangling'));
    await writeFile(join(ws, 'naïve ünïcode.txt'), 'é');
    await utimes(join(ws, 'src/lib/a.txt'), 1_600_000_000.25, 1_600_000_000.25);
    await utimes(join(ws, 'empty/deeper'), 1_500_000_000, 1_500_000_000);
  });
  afterAll(async () => {
    await chmod(join(source.workspace, 'locked'), 0o755).catch(() => undefined);
    await chmod(join(target.workspace, 'locked'), 0o755).catch(() => undefined);
    await source.stop();
    await target.stop();
    await rm(outside, { recursive: true, force: true });
  });

  it('streams the workspace out with its summary in the trailer', async () => {
    const res = await call(source, 'GET', '/v1/archive');
    expect(res.status).toBe(200);
    summary = JSON.parse(res.trailers[ARCHIVE_SUMMARY_TRAILER] ?? 'null') as ArchiveSummary;
    archive = res.body;
    expect(summary).toMatchObject({
      files: 6,
      directories: 5,
      symlinks: 3,
      skipped: 0,
      archiveBytes: archive.length,
    });
    expect(summary.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const digest = await call(source, 'GET', '/v1/archive/digest');
    expect(JSON.parse(digest.body.toString())).toEqual({ ...summary, archiveBytes: 0 });
  });

  it('writes it into another workspace: same tree, modes, links (never followed) and mtimes', async () => {
    await writeFile(join(target.workspace, 'stale.txt'), 'from before the restore');
    const res = await call(
      target,
      'PUT',
      `/v1/archive?digest=${summary.digest}&maxBytes=${archive.length}`,
      archive,
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({ ...summary, skipped: 0 });
    expect(await describeTree(target.workspace)).toEqual(await describeTree(source.workspace));
    expect(await readlink(join(target.workspace, 'escape'))).toBe(join(outside, 'secret.txt'));
    expect(await readdir(outside)).toEqual(['secret.txt']);
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('outside the workspace');
    const back = await call(target, 'GET', '/v1/archive/digest');
    expect((JSON.parse(back.body.toString()) as ArchiveSummary).digest).toBe(summary.digest);
    // The log line says where the restore's time went: waiting for the body, and the rest.
    const line = target.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'workspace restored');
    expect(line).toMatchObject({ digest: summary.digest, chunks: expect.any(Number) });
    expect(line!.chunks).toBeGreaterThanOrEqual(1);
    expect(line!.waitedMs).toBeGreaterThanOrEqual(0);
    expect(line!.waitedMs).toBeLessThanOrEqual(line!.durationMs as number);
  });

  it('refuses another digest with 422 digest-mismatch and leaves the workspace empty', async () => {
    const wrong = `sha256:${'0'.repeat(64)}`;
    const res = await call(target, 'PUT', `/v1/archive?digest=${wrong}`, archive);
    expect(res.status).toBe(422);
    expect(problemOf({ ...res, reusedSocket: false }).type).toMatch(/digest-mismatch$/);
    expect(await readdir(target.workspace)).toEqual([]);
  });

  it('refuses a corrupted archive (a flipped content byte) as a digest mismatch, workspace empty', async () => {
    const bad = Buffer.from(archive);
    const at = bad.indexOf(Buffer.from('alpha\n'));
    bad[at] = 0x41;
    const res = await call(target, 'PUT', `/v1/archive?digest=${summary.digest}`, bad);
    expect(res.status).toBe(422);
    expect(await readdir(target.workspace)).toEqual([]);
  });

  it('refuses a malformed or truncated archive (400) and too many bytes (413), workspace empty', async () => {
    const cut = await call(target, 'PUT', `/v1/archive?digest=${summary.digest}`, archive.subarray(0, 5000));
    expect(cut.status).toBe(400);
    expect(problemOf({ ...cut, reusedSocket: false }).type).toMatch(/archive-invalid$/);
    expect(await readdir(target.workspace)).toEqual([]);
    const big = await call(target, 'PUT', `/v1/archive?digest=${summary.digest}&maxBytes=1000`, archive);
    expect(big.status).toBe(413);
    expect(await readdir(target.workspace)).toEqual([]);
    const query = await call(target, 'PUT', '/v1/archive?digest=nope', archive);
    expect(query.status).toBe(400);
  });

  it('refuses an archive that would write through a symlink or leave the workspace', async () => {
    const { encodeEntryHeader, END_OF_ARCHIVE, padding, TreeHasher } = await import('@sandbox-platform/api');
    const entries = [
      {
        path: Buffer.from('link'),
        type: 'symlink' as const,
        mode: 0,
        mtime: '1',
        size: 0,
        linkTarget: Buffer.from(outside),
      },
      { path: Buffer.from('link/pwned.txt'), type: 'file' as const, mode: 0o644, mtime: '1', size: 2 },
    ];
    const body = Buffer.concat([
      encodeEntryHeader(entries[0]!),
      encodeEntryHeader(entries[1]!),
      Buffer.from('hi'),
      Buffer.alloc(padding(2)),
      END_OF_ARCHIVE,
    ]);
    expect(() => {
      const h = new TreeHasher();
      entries.forEach((e) => h.add(e));
    }).toThrow();
    const res = await call(target, 'PUT', `/v1/archive?digest=sha256:${'1'.repeat(64)}`, body);
    expect(await readdir(outside)).toEqual(['secret.txt']);
    expect(res.status).toBe(400);
    expect(await readdir(target.workspace)).toEqual([]);
  });

  it('runs one archive call at a time (409 archive-busy)', async () => {
    // An archive held open by a reader that stops reading: more than the sockets buffer.
    const big = join(source.workspace, 'big.bin');
    await writeFile(big, randomBytes(32 * 1024 * 1024));
    try {
      const held = await new Promise<IncomingMessage>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: source.running.port,
            path: '/v1/archive',
            agent: false,
            headers: { authorization: `Bearer ${source.token}` },
          },
          (res) => {
            res.pause();
            resolve(res);
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(held.statusCode).toBe(200);
      const busy = await call(source, 'GET', '/v1/archive/digest');
      expect(busy.status).toBe(409);
      expect(problemOf({ ...busy, reusedSocket: false }).type).toMatch(/archive-busy/);
      held.destroy();
    } finally {
      await rm(big, { force: true });
    }
  });

  it('POST /v1/archive/digest {quiesce} stops background writers before the digest', async () => {
    const started = await source.send({
      method: 'POST',
      path: '/v1/processes',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'while true; do date +%N >> /workspace/ticker.log; sleep 0.05; done' }),
    });
    expect(started.status).toBe(201);
    await new Promise((r) => setTimeout(r, 300));
    const quiet = await source.send({
      method: 'POST',
      path: '/v1/archive/digest',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ quiesce: true }),
    });
    expect(quiet.status).toBe(200);
    const digest = (JSON.parse(quiet.body.toString()) as ArchiveSummary).digest;
    await new Promise((r) => setTimeout(r, 400));
    const later = await call(source, 'GET', '/v1/archive/digest');
    expect((JSON.parse(later.body.toString()) as ArchiveSummary).digest).toBe(digest);
    // The suspension may be cancelled (a resume before the Pod goes): new processes start again.
    // Regression: the E2B e2e's pause then connect got 503 shell-unavailable on its next command.
    const again = await source.send({
      method: 'POST',
      path: '/v1/processes',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'true' }),
    });
    expect(again.status).toBe(201);
    const refused = await source.send({
      method: 'POST',
      path: '/v1/archive/digest',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ quiesce: 'yes' }),
    });
    expect(refused.status).toBe(400);
  });

  it('needs the token', async () => {
    const res = await source.send({ method: 'GET', path: '/v1/archive' }, false);
    expect(res.status).toBe(401);
  });
});
