/**
 * e2e: streamed stdin through the in-cluster api-gateway (issue 15, ADR 0023): an NDJSON body on
 * `POST /v1/sessions/{name}/exec/stream` (the exec request on its first line, then
 * `{"type":"stdin","data","encoding"?}` lines, optionally `{"type":"close"}`), with the API key.
 *
 * - 1 MiB of random binary stdin in 22 lines through `cat` comes back byte-exact (sha256).
 * - Each line reaches the command as it arrives: `head -n1` answers (its stdout event) while the
 *   body is still open; only then is stdin ended.
 * - A later stdin line over the line bound (1 MiB) or malformed cuts the answer (no exit event: the
 *   documented form of a stream that broke, docs/gateway.md) and the command is stopped (no process
 *   of it left in the sandbox); a bad request line is a problem+json 400 before anything runs.
 * - The TypeScript SDK's `execStream` sends an AsyncIterable as stdin (1 MiB, sha256).
 *
 * Needs the platform deployed and, from the e2e setup: E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';

import { describe, expect, it } from '@jest/globals';

import { SandboxClient, eventBytes, type ExecStreamEvent } from '@sandbox-platform/client';
import { namespaceOf } from '../isolation/support.js';
import { BASE, KEY, eventually, gatewaySession } from './interactive-support.js';
import { line, openStream, processesWith as processesIn, stdinLine, write } from './stdin-stream.js';

const MIB = 1024 * 1024;
/** Raw bytes per stdin line: its base64 (64 KiB) stays well under the 1 MiB line bound. */
const LINE_BYTES = 48 * 1024;

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

describe('streamed stdin through the gateway', () => {
  const { name, path } = gatewaySession('gw-stdin');

  const processesWith = (marker: string): Promise<string> => processesIn(path, marker);

  it('1 MiB of random binary stdin in 22 lines through cat comes back byte-exact (sha256)', async () => {
    const data = randomBytes(MIB);
    const call = openStream(path, { command: 'cat', timeoutSeconds: 60 });
    let lines = 0;
    for (let at = 0; at < data.length; at += LINE_BYTES, lines++) {
      await write(call.req, stdinLine(data.subarray(at, at + LINE_BYTES)));
    }
    call.req.end(line({ type: 'close' }));
    const a = await call.answer;
    expect(lines).toBe(22);
    expect([a.status, a.contentType]).toEqual([200, expect.stringContaining('application/x-ndjson')]);
    const exit = a.events.at(-1);
    expect(exit).toMatchObject({ type: 'exit', exitCode: 0, truncated: false });
    expect(exit?.stdinError).toBeUndefined();
    expect({ bytes: a.stdout.length, sha256: sha256(a.stdout) }).toEqual({
      bytes: data.length,
      sha256: sha256(data),
    });
  });

  it('head -n1 answers while stdin is still open: each line reaches the command as it arrives', async () => {
    const call = openStream(path, { command: 'head -n1', timeoutSeconds: 60 });
    try {
      await write(call.req, stdinLine('first\n'));
      // The body is still open: this stdout can only come from the first line.
      await call.stdoutSeen('first\n');
      expect(call.req.writableEnded).toBe(false);
      // Only now is stdin ended (a line head never reads, then the close line).
      call.req.end(stdinLine('second\n') + line({ type: 'close' }));
      const a = await call.answer;
      expect(a.stdout.toString('utf8')).toBe('first\n');
      expect(a.events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0 });
    } finally {
      // A failed wait leaves the body open: the command would hold the agent's one shell.
      call.req.destroy();
    }
  });

  /**
   * A `cat` whose stdin echo shows the stream is up, then `bad` as a later line: the answer is cut
   * (no exit event, an incomplete body) and the command stopped.
   */
  async function expectCut(bad: string): Promise<void> {
    const marker = `stdin-cut-${randomUUID()}`;
    // Two commands, so bash does not exec cat and keeps the marker in its arguments while cat runs.
    const call = openStream(path, { command: `bash -c 'cat; true' ${marker}`, timeoutSeconds: 120 });
    try {
      await write(call.req, stdinLine('ok\n'));
      await call.stdoutSeen('ok\n');
      expect(await processesWith(marker)).not.toBe('');
      await write(call.req, bad);
      // Ended as a good caller would: an uncut stream would now end with cat's exit event.
      if (!call.req.destroyed) call.req.end(line({ type: 'close' }));
      const a = await call.answer;
      expect({
        status: a.status,
        exit: a.events.find((e) => e.type === 'exit'),
        complete: a.complete,
      }).toEqual({ status: 200, exit: undefined, complete: false });
      expect(a.stdout.toString('utf8')).toBe('ok\n');
      await eventually(`the command ${marker} to be stopped`, async () =>
        (await processesWith(marker)) === '' ? true : undefined,
      );
    } finally {
      call.req.destroy();
    }
  }

  it('a stdin line over the 1 MiB line bound cuts the answer and stops the command', async () => {
    await expectCut(line({ type: 'stdin', data: 'a'.repeat(MIB + 1) }));
  });

  it('a malformed stdin line cuts the answer and stops the command', async () => {
    await expectCut(line({ type: 'stdin' })); // no data
  });

  it('a stdin line that is not JSON cuts the answer and stops the command', async () => {
    await expectCut('not json\n');
  });

  it('a bad request line is a problem+json 400 before anything runs', async () => {
    for (const first of ['{"command": ', '{"command":"cat","bogus":1}', '{"command":"cat","stdin":"x"}']) {
      const call = openStream(path, first + '\n');
      call.req.end(stdinLine('x'));
      const a = await call.answer;
      expect({ first, status: a.status, contentType: a.contentType }).toEqual({
        first,
        status: 400,
        contentType: expect.stringContaining('application/problem+json'),
      });
      expect(JSON.parse(a.raw)).toMatchObject({ type: 'https://sandbox.dev/problems/invalid-request' });
    }
  });

  it("the TypeScript SDK's execStream sends an AsyncIterable as stdin (1 MiB, sha256)", async () => {
    const client = new SandboxClient({
      baseUrl: BASE,
      apiKey: KEY,
      namespace: namespaceOf('e2e'),
      retry: { retries: 0 },
    });
    const data = randomBytes(MIB);
    async function* stdin(): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < data.length; at += 100 * 1024) {
        await new Promise((r) => setImmediate(r)); // produced over time, as a real source would
        yield data.subarray(at, at + 100 * 1024);
      }
    }
    const events: ExecStreamEvent[] = [];
    for await (const e of client.execStream(name, { command: 'cat', timeoutSeconds: 60, stdin: stdin() }))
      events.push(e);
    const out = Buffer.concat(events.flatMap((e) => (e.type === 'exit' ? [] : [eventBytes(e)])));
    expect(events.at(-1)).toMatchObject({ type: 'exit', exitCode: 0 });
    expect({ bytes: out.length, sha256: sha256(out) }).toEqual({ bytes: data.length, sha256: sha256(data) });
  });
});
