/** A scripted ExecTransport that records what it was asked to do. */
import { Readable } from 'node:stream';

import type { ExecTarget } from '../../src/sessions/model.js';
import type {
  CallOptions,
  ExecRequest,
  ExecResult,
  ExecTransport,
  FileDownload,
  UploadBody,
  WriteFileResult,
} from '../../src/exec/types.js';

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A successful result with the given fields. */
export function result(fields: Partial<ExecResult> = {}): ExecResult {
  return {
    stdout: '',
    stderr: '',
    stdoutEncoding: 'utf-8',
    stderrEncoding: 'utf-8',
    exitCode: 0,
    durationMs: 3,
    truncated: false,
    timedOut: false,
    shellReset: false,
    ...fields,
  };
}

/** One recorded call. */
export interface Call {
  op: 'exec' | 'stream' | 'write' | 'read';
  target: ExecTarget;
  req?: ExecRequest;
  path?: string;
  data?: Buffer;
}

/** Fake transport: answers from `next*` fields, defaulting to success. */
export class FakeTransport implements ExecTransport {
  readonly calls: Call[] = [];
  nextResult: ExecResult | Error = result({ stdout: 'hello\n' });
  nextStream: string[] = [
    '{"type":"stdout","data":"hi\\n","encoding":"utf-8"}\n',
    '{"type":"exit","exitCode":0,"durationMs":1,"truncated":false,"timedOut":false,"shellReset":false}\n',
  ];
  files = new Map<string, Buffer>();
  error: Error | undefined;

  exec(target: ExecTarget, req: ExecRequest, _opts?: CallOptions): Promise<ExecResult> {
    this.calls.push({ op: 'exec', target, req });
    if (this.error) return Promise.reject(this.error);
    return this.nextResult instanceof Error
      ? Promise.reject(this.nextResult)
      : Promise.resolve(this.nextResult);
  }

  execStream(target: ExecTarget, req: ExecRequest): Promise<Readable> {
    this.calls.push({ op: 'stream', target, req });
    if (this.error) return Promise.reject(this.error);
    return Promise.resolve(Readable.from(this.nextStream.map((l) => Buffer.from(l))));
  }

  async writeFile(target: ExecTarget, path: string, upload: UploadBody): Promise<WriteFileResult> {
    const data = Buffer.isBuffer(upload) ? upload : await readAll(upload.stream);
    this.calls.push({ op: 'write', target, path, data });
    if (this.error) throw this.error;
    this.files.set(path, data);
    return { path, size: data.length };
  }

  readFile(target: ExecTarget, path: string): Promise<FileDownload> {
    this.calls.push({ op: 'read', target, path });
    if (this.error) return Promise.reject(this.error);
    const data = this.files.get(path);
    if (!data) return Promise.reject(new Error(`fake: no file ${path}`));
    return Promise.resolve({ body: Readable.from([data]), size: data.length });
  }
}
