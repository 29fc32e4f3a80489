/**
 * The guard of a code run's stream (exec/code-guard.ts): only lines of the contract pass, one end
 * line last; a line over CODE_LINE_MAX_BYTES, a stream over CODE_RUN_MAX_BYTES, a line of another
 * shape or a stream without its end is a 502 agent-protocol-error, and the guard never holds more
 * than one partial line.
 */
import { describe, expect, it } from '@jest/globals';
import { Readable } from 'node:stream';

import { CODE_LINE_MAX_BYTES, CODE_RUN_MAX_BYTES } from '@sandbox-platform/api';

import { CodeStreamGuard } from '../../../../src/exec/guards/code-guard.js';

const END = {
  type: 'end',
  status: 'ok',
  durationMs: 1,
  contextReset: false,
  truncated: false,
  dropped: { stdout: 0, stderr: 0, displays: 0 },
};
const line = (v: unknown): string => JSON.stringify(v) + '\n';

/** Pipes chunks through a guard; resolves with the output or the error's slug and detail. */
async function through(
  chunks: Array<string | Buffer>,
  hold?: (n: number) => boolean,
): Promise<{ out: string; slug?: string; detail?: string }> {
  const guard = new CodeStreamGuard(undefined, hold);
  const parts: string[] = [];
  guard.on('data', (c: Buffer) => parts.push(c.toString()));
  return new Promise((resolve) => {
    guard.on('error', (err: Error & { slug?: string; detail?: string }) =>
      resolve({ out: parts.join(''), slug: err.slug, detail: err.detail }),
    );
    guard.on('end', () => resolve({ out: parts.join('') }));
    Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))).pipe(guard);
  });
}

describe('code stream guard', () => {
  it('passes the lines of the contract, split anywhere, re-serialized', async () => {
    const text =
      line({ type: 'stdout', text: 'hi' }) +
      line({ type: 'result', data: { 'text/plain': '42' }, executionCount: 1 }) +
      line(END);
    const r = await through([text.slice(0, 7), text.slice(7, 40), text.slice(40)]);
    expect(r.slug).toBeUndefined();
    expect(r.out).toBe(text);
  });

  it('refuses unknown types, extra members, lines after the end and a stream without an end', async () => {
    expect((await through([line({ type: 'shell', text: 'x' }), line(END)])).slug).toBe(
      'agent-protocol-error',
    );
    expect((await through([line({ type: 'stdout', text: 'x', extra: 1 }), line(END)])).slug).toBe(
      'agent-protocol-error',
    );
    expect((await through([line(END), line({ type: 'stdout', text: 'x' })])).slug).toBe(
      'agent-protocol-error',
    );
    expect((await through([line({ type: 'stdout', text: 'x' })])).detail).toContain('without an end line');
  });

  it('SECURITY: a line over CODE_LINE_MAX_BYTES fails as soon as it is that long, without a newline', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    const chunks = [
      Buffer.from('{"type":"stdout","text":"'),
      ...Array.from({ length: CODE_LINE_MAX_BYTES / chunk.length + 2 }, () => chunk),
    ];
    const r = await through(chunks);
    expect(r.slug).toBe('agent-protocol-error');
    expect(r.detail).toContain(`longer than ${CODE_LINE_MAX_BYTES} bytes`);
  });

  it('SECURITY: a stream over CODE_RUN_MAX_BYTES fails, even in small valid lines', async () => {
    const one = line({ type: 'stdout', text: 'x'.repeat(60_000) });
    const count = Math.ceil(CODE_RUN_MAX_BYTES / one.length) + 1;
    const r = await through(Array.from({ length: count }, () => one));
    expect(r.slug).toBe('agent-protocol-error');
    expect(r.detail).toContain(`longer than ${CODE_RUN_MAX_BYTES} bytes`);
  });

  it('stops with 503 overloaded when the answer budget refuses a line', async () => {
    const r = await through([line({ type: 'stdout', text: 'x' }), line(END)], () => false);
    expect(r.slug).toBe('overloaded');
  });
});
