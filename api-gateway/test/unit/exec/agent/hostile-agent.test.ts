/**
 * The Agent transport against the hostile agent (test-e2e/hostile-agent): every misbehaviour is
 * answered with its problem, and what the transport holds stays bounded by the answer limit
 * (bytes buffered, not timing, is what is asserted). Memory of a whole gateway process under
 * these attacks is measured in test/integration/hostile.test.ts.
 */
import { Readable } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import type { ProblemError } from '../../../../src/errors.js';
import { ANSWER_MEMORY_FACTOR, ByteBudget } from '../../../../src/limits/byte-budget.js';
import { AgentTransport, answerLimit } from '../../../../src/exec/agent/agent-transport.js';
import { readLimited } from '../../../../src/exec/read-limited.js';
import type { ExecTarget } from '../../../../src/sessions/model.js';
import { startHostileAgent, type HostileAgent } from '../../../helpers/hostile-agent.js';

const target: ExecTarget = {
  namespace: 'team-a',
  name: 'evil',
  uid: 'uid-1',
  podName: 'sbs-evil',
  podIP: '127.0.0.1',
  transport: 'Agent',
  idleTimeoutSeconds: 1800,
};
/** The output cap of these tests (the production default is 1 MiB; smaller keeps them quick). */
const CAP = 64 * 1024;

describe('AgentTransport against the hostile agent', () => {
  let agent: HostileAgent;
  let budget: ByteBudget;
  let t: AgentTransport;
  beforeAll(async () => {
    agent = await startHostileAgent();
    budget = new ByteBudget(0);
    t = new AgentTransport({
      masterKey: Buffer.alloc(32, 1),
      port: agent.port,
      connectTimeoutMs: 1000,
      connectRetries: 0,
      deadlineMarginMs: 500,
      maxOutputBytes: CAP,
      fileTimeoutMs: 3000,
    });
  });
  afterAll(async () => {
    t.close();
    await agent.stop();
  });

  /** Every exec takes its memory from `budget`, as a request's hold does (never given back here). */
  const exec = (command: string, timeoutSeconds = 5): Promise<unknown> =>
    t.exec(target, { command, timeoutSeconds }, { hold: budget }).catch((e: unknown) => e);

  it.each([
    ['tiny-chunks:12000000', 'agent-protocol-error', /chunks too small/],
    ['small-chunks:2000000', 'agent-answer-too-large', /exceeds/],
    ['small-chunks:600000', 'agent-protocol-error', /over the output cap/],
    ['nested:4000000', 'agent-answer-too-large', /exceeds/],
    ['nested:400000', 'agent-protocol-error', /nests deeper/],
    ['many-keys:400000', 'agent-protocol-error', /more than \d+ members/],
    ['huge-output:200000', 'agent-protocol-error', /stdout is 200000 bytes, over the output cap/],
    ['oversized', 'agent-answer-too-large', /exceeds/],
    ['endless', 'agent-answer-too-large', /exceeds/],
    ['bad-json', 'agent-protocol-error', /not valid JSON/],
    ['null', 'agent-protocol-error', /must be object/],
    ['wrong-types', 'agent-protocol-error', /must be/],
    ['extra-fields', 'agent-protocol-error', /unknown field/],
    ['bad-http', 'agent-protocol-error', /invalid status line/],
    ['big-problem', 'agent-answer-too-large', /exceeds/],
  ])('exec %s -> 502 %s', async (mode, slug, detail) => {
    const before = budget.inUse;
    const err = (await exec(`hostile:${mode}`)) as { slug: string; status: number; detail: string };
    expect({ slug: err.slug, status: err.status }).toEqual({ slug, status: 502 });
    expect(err.detail).toMatch(detail);
    // What a call took for its answer is bounded by the answer limit (times the memory factor).
    expect(budget.inUse - before).toBeLessThanOrEqual(answerLimit(CAP) * ANSWER_MEMORY_FACTOR);
  });

  it.each(['hang', 'hang-body'])('exec %s -> 504 at the deadline', async (mode) => {
    expect(await exec(`hostile:${mode}`, 1)).toMatchObject({ slug: 'upstream-timeout', status: 504 });
  });

  it('answers a quiet command normally (the same agent serves well-behaved calls)', async () => {
    expect(await t.exec(target, { command: 'true', timeoutSeconds: 5 })).toMatchObject({ exitCode: 0 });
  });

  it.each([
    ['stream-endless', /output cap/],
    ['stream-tiny', /exceeds \d+ bytes/],
    ['stream-garbage', /not valid JSON/],
    ['stream-long-line', /longer than/],
    ['stream-tiny-chunks', /chunks too small/],
    ['stream-wrong', /must be integer/],
  ])('exec/stream %s -> the stream fails with 502, after at most the answer limit', async (mode, detail) => {
    const stream = await t.execStream(target, { command: `hostile:${mode}`, timeoutSeconds: 5 });
    let passed = 0;
    stream.on('data', (c: Buffer) => (passed += c.length));
    const err = await new Promise<ProblemError>((resolve) =>
      stream.once('error', (e) => resolve(e as ProblemError)),
    );
    expect(err.status).toBe(502);
    expect(err.detail).toMatch(detail);
    expect(passed).toBeLessThanOrEqual(answerLimit(CAP));
  });

  it('a download that never ends is cut at the file limit', async () => {
    const file = await t.readFile(target, 'hostile-endless', 100_000);
    await expect(readLimited(file.body, 1 << 20)).rejects.toMatchObject({ slug: 'payload-too-large' });
  });

  it('a download of 1-byte chunks is a protocol error', async () => {
    const file = await t.readFile(target, 'hostile-tiny-chunks', 10 << 20);
    await expect(readLimited(file.body, 10 << 20)).rejects.toMatchObject({ slug: 'agent-protocol-error' });
  });
});

describe('uploads to an agent that does not read them', () => {
  let agent: HostileAgent;
  beforeAll(async () => {
    agent = await startHostileAgent();
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('wait with backpressure: only what the sockets hold is read from the client, not the whole file', async () => {
    const t = new AgentTransport({
      masterKey: Buffer.alloc(32, 1),
      port: agent.port,
      connectTimeoutMs: 1000,
      connectRetries: 0,
      deadlineMarginMs: 500,
      maxOutputBytes: CAP,
      fileTimeoutMs: 3000,
    });
    const size = 64 << 20;
    let produced = 0;
    // A client upload produced on demand, as the request stream of a real upload is.
    const upload = new Readable({
      read(): void {
        if (produced >= size) return void this.push(null);
        produced += 64 * 1024;
        this.push(Buffer.alloc(64 * 1024, 1));
      },
    });
    const err = await t
      .writeFile(target, 'hostile-no-read', { stream: upload, size })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ slug: 'upstream-timeout' });
    console.log(
      `upload to a non-reading agent: ${(produced / 2 ** 20).toFixed(1)} MiB of ${size >> 20} MiB read`,
    );
    // The kernel's socket buffers on loopback hold a few MiB (tcp_wmem max 4 MiB here).
    expect(produced).toBeLessThan(16 << 20);
    t.close();
  });
});

describe('the shared answer budget', () => {
  let agent: HostileAgent;
  beforeAll(async () => {
    agent = await startHostileAgent();
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('answers 503 overloaded when a large answer does not fit', async () => {
    const budget = new ByteBudget(100_000);
    const t = new AgentTransport({
      masterKey: Buffer.alloc(32, 1),
      port: agent.port,
      connectTimeoutMs: 1000,
      connectRetries: 0,
      deadlineMarginMs: 500,
      maxOutputBytes: 1 << 20,
      fileTimeoutMs: 3000,
    });
    const err = await t
      .exec(target, { command: 'hostile:huge-output:400000', timeoutSeconds: 5 }, { hold: budget })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ slug: 'overloaded', status: 503, retryAfterSeconds: 1 });
    expect(budget.inUse).toBe(0); // nothing was taken: the first large piece did not fit
    t.close();
  });
});
