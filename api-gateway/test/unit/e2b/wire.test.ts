/** Error answers, paths and multipart uploads of the envd API (envd/errors.ts, paths.ts, multipart.ts). */
import { Readable } from 'node:stream';

import { describe, expect, it } from '@jest/globals';
import { Code, ConnectError } from '@connectrpc/connect';

import {
  codeName,
  codeOf,
  connectErrorAnswer,
  connectStreamErrorAnswer,
  envdHttpErrorAnswer,
  toConnectError,
} from '../../../src/e2b/envd/errors.js';
import { fileParts } from '../../../src/e2b/envd/multipart.js';
import { watchAnswers } from '../../../src/e2b/envd/watcher.js';
import { workspaceEntry, workspacePath } from '../../../src/e2b/envd/paths.js';
import { ProblemError } from '../../../src/errors.js';

describe('envd errors', () => {
  it('map problems to the codes the SDKs turn into their error classes', () => {
    expect(codeOf(new ProblemError('invalid-request'))).toBe(Code.InvalidArgument);
    expect(codeOf(new ProblemError('path-forbidden'))).toBe(Code.InvalidArgument);
    expect(codeOf(new ProblemError('unauthorized'))).toBe(Code.Unauthenticated);
    expect(codeOf(new ProblemError('process-not-found'))).toBe(Code.NotFound);
    expect(codeOf(new ProblemError('rate-limited'))).toBe(Code.ResourceExhausted);
    expect(codeOf(new ProblemError('session-not-ready'))).toBe(Code.Unavailable);
    expect(codeOf(new ProblemError('upstream-timeout'))).toBe(Code.DeadlineExceeded);
    expect(codeName(Code.InvalidArgument)).toBe('invalid_argument');
  });

  it('answer unary calls with the status and JSON of the Connect protocol; no 500 detail', () => {
    expect(connectErrorAnswer(new ProblemError('unauthorized', 'no token'))).toEqual({
      status: 401,
      body: { code: 'unauthenticated', message: 'no token' },
    });
    expect(connectErrorAnswer(new ProblemError('internal', 'secret detail')).body).toEqual({
      code: 'internal',
      message: 'internal error',
    });
    const gone = new ProblemError('upstream-error', 'not found', {
      extensions: { e2b: 'sandbox-not-found' },
    });
    expect(connectErrorAnswer(gone).status).toBe(502);
    expect(envdHttpErrorAnswer(gone)).toEqual({ status: 502, body: { code: 502, message: 'not found' } });
    expect(envdHttpErrorAnswer(new ProblemError('not-found', 'no file')).status).toBe(404);
  });

  it('answer streaming calls with one end-of-stream envelope holding the error', () => {
    const env = connectStreamErrorAnswer(new ProblemError('invalid-request', 'too big'));
    expect(env[0]).toBe(2);
    expect(env.readUInt32BE(1)).toBe(env.length - 5);
    expect(JSON.parse(env.subarray(5).toString())).toEqual({
      error: { code: 'invalid_argument', message: 'too big' },
    });
  });

  it('pass ConnectErrors through and wrap everything else', () => {
    const ce = new ConnectError('x', Code.AlreadyExists);
    expect(toConnectError(ce)).toBe(ce);
    expect(toConnectError(new ProblemError('not-found', 'gone')).code).toBe(Code.NotFound);
    expect(toConnectError(new Error('boom'))).toMatchObject({
      code: Code.Internal,
      rawMessage: 'internal error',
    });
  });
});

describe('paths', () => {
  it('resolve relative and absolute paths in the workspace', () => {
    expect(workspacePath('a/b')).toEqual({ absolute: '/workspace/a/b', relative: 'a/b' });
    expect(workspacePath('/workspace/a/./c/../b/')).toEqual({ absolute: '/workspace/a/b', relative: 'a/b' });
    expect(workspacePath('.')).toEqual({ absolute: '/workspace', relative: '' });
    expect(workspacePath('x', '/tmp/w')).toEqual({ absolute: '/tmp/w/x', relative: 'x' });
  });

  it.each(['/etc/passwd', '../x', 'a/../../x', '/workspacex/a', '/'])(
    'refuse %p (outside the workspace)',
    (p) => {
      expect(() => workspacePath(p)).toThrow(expect.objectContaining({ slug: 'path-forbidden' }));
    },
  );

  it('refuse NUL bytes, and the workspace itself where an entry is needed', () => {
    expect(() => workspacePath('a\0b')).toThrow(/NUL/);
    expect(() => workspaceEntry('/workspace')).toThrow(/the workspace itself/);
  });
});

function multipart(boundary: string, parts: Array<{ filename: string; data: string }>): Buffer {
  const body = parts
    .map(
      (p) =>
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${p.filename}"\r\nContent-Type: application/octet-stream\r\n\r\n${p.data}\r\n`,
    )
    .join('');
  return Buffer.from(`${body}--${boundary}--\r\n`);
}

async function collect(
  body: Buffer,
  limits = { maxFileBytes: 100, maxFiles: 5 },
): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  const headers = { 'content-type': 'multipart/form-data; boundary=XyZ' };
  for await (const part of fileParts(
    Readable.from([body.subarray(0, 7), body.subarray(7)]),
    headers,
    limits,
  )) {
    const chunks: Buffer[] = [];
    for await (const c of part.stream) chunks.push(c as Buffer);
    out.push([part.filename, Buffer.concat(chunks).toString()]);
  }
  return out;
}

describe('multipart uploads', () => {
  it('yield the file parts in order, paths kept', async () => {
    const body = multipart('XyZ', [
      { filename: '/workspace/a/one.txt', data: 'first' },
      { filename: 'two.txt', data: 'second' },
    ]);
    await expect(collect(body)).resolves.toEqual([
      ['/workspace/a/one.txt', 'first'],
      ['two.txt', 'second'],
    ]);
  });

  it('fail a part over the size limit, too many files, and malformed bodies (400)', async () => {
    await expect(
      collect(multipart('XyZ', [{ filename: 'big', data: 'x'.repeat(200) }])),
    ).rejects.toMatchObject({
      slug: 'invalid-request',
      message: expect.stringContaining('upload limit of 100 bytes'),
    });
    const six = Array.from({ length: 6 }, (_, i) => ({ filename: `f${i}`, data: 'x' }));
    await expect(collect(multipart('XyZ', six))).rejects.toMatchObject({
      message: expect.stringContaining('at most 5 files'),
    });
    await expect(
      (async () => {
        for await (const p of fileParts(
          Readable.from([Buffer.from('x')]),
          { 'content-type': 'multipart/form-data' },
          { maxFileBytes: 1, maxFiles: 1 },
        ))
          p.stream.resume();
      })(),
    ).rejects.toMatchObject({ slug: 'invalid-request' });
  });
});

describe("the agent's watch lines as envd events", () => {
  const names = (line: Parameters<typeof watchAnswers>[0], dir = 'w'): unknown[] =>
    watchAnswers(line, dir).map((a) =>
      a.event?.case === 'filesystem' ? [a.event.value.type, a.event.value.name] : a.event?.case,
    );

  it('start, create, modify, delete; a rename is RENAME of the old name and CREATE of the new', () => {
    expect(names({ type: 'watching', path: 'w', recursive: false })).toEqual(['start']);
    expect(names({ type: 'create', path: 'w/a', directory: false })).toEqual([[1, 'a']]);
    expect(names({ type: 'modify', path: 'w/sub/b', directory: false })).toEqual([[2, 'sub/b']]);
    expect(names({ type: 'delete', path: 'w/a', directory: false })).toEqual([[3, 'a']]);
    expect(names({ type: 'rename', from: 'w/a', path: 'w/b', directory: false })).toEqual([
      [4, 'a'],
      [1, 'b'],
    ]);
    expect(names({ type: 'create', path: 'top', directory: true }, '')).toEqual([[1, 'top']]);
    expect(names({ type: 'overflow', dropped: 3 })).toEqual([]);
    expect(names({ type: 'end', reason: 'timeout' })).toEqual([]);
  });
});
