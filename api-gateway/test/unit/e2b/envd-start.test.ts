/**
 * envd's Start over the agent: one agent call starts the process and follows it (start, output
 * and exit in one round trip), the exited process is removed after the end event (off the
 * answer's path); an older agent's plain start answer is followed with a second call; a full
 * sandbox is reaped once and the start tried again.
 */
import { PassThrough, Readable } from 'node:stream';

import { describe, expect, it } from '@jest/globals';
import { createContextValues, type HandlerContext } from '@connectrpc/connect';

import { ProblemError } from '../../../src/errors.js';
import { EnvdProcesses, type ProcessServiceDeps } from '../../../src/e2b/envd/process-service.js';
import { ENVD_CALL } from '../../../src/e2b/envd/sandbox-calls.js';

const REF = { namespace: 'team-a', name: 's' };
const LINES = [
  '{"type":"stdout","offset":0,"skipped":0,"data":"hi\\n","encoding":"utf-8"}\n',
  '{"type":"exit","exitCode":3}\n',
];

function ctx(): HandlerContext {
  return {
    values: createContextValues().set(ENVD_CALL, { sandbox: REF } as never),
    signal: new AbortController().signal,
    requestHeader: new Headers(),
  } as unknown as HandlerContext;
}

const START = {
  process: { cmd: '/bin/bash', args: ['-l', '-c', 'echo hi; exit 3'], envs: {} },
  stdin: false,
} as never;

/** The agent as the service sees it: `plain`: an older agent (a start without its follow). */
function fixture(opts: { plain?: boolean; fullOnce?: boolean } = {}) {
  const calls: string[] = [];
  let full = opts.fullOnce === true;
  let removed!: () => void;
  const removal = new Promise<void>((resolve) => (removed = resolve));
  const processes = {
    startFollow: (_ref: unknown, req: { command: string }) => {
      calls.push('startFollow');
      if (full) {
        full = false;
        return Promise.reject(new ProblemError('too-many-processes', 'the agent holds 16 processes'));
      }
      expect(req.command).toMatch(/^# e2b1 - /);
      return Promise.resolve(
        opts.plain ? { id: 'p1', pid: 41 } : { id: 'p1', pid: 41, stream: Readable.from(LINES) },
      );
    },
    follow: () => {
      calls.push('follow');
      const s = new PassThrough();
      s.end(LINES.join(''));
      return Promise.resolve(s);
    },
    list: () => {
      calls.push('list');
      return Promise.resolve({
        processes: [{ id: 'old', pid: 7, state: 'exited', command: '# e2b1 - e30\nexec true' }],
      });
    },
    remove: (_ref: unknown, id: string) => {
      calls.push(`remove ${id}`);
      if (id === 'p1') removed();
      return Promise.resolve();
    },
  };
  const envd = new EnvdProcesses({ processes, execs: {}, log: {} } as unknown as ProcessServiceDeps);
  return { envd, calls, removal };
}

async function events(envd: EnvdProcesses): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const r of envd.impl().start!(START, ctx()) as AsyncIterable<{ event: { event: unknown } }>)
    out.push(r.event.event);
  return out;
}

const EXPECTED = [
  { case: 'start', value: { pid: 41 } },
  { case: 'data', value: { output: { case: 'stdout', value: Buffer.from('hi\n') } } },
  {
    case: 'end',
    value: { exitCode: 3, exited: true, status: 'exit status 3', error: 'exit status 3' },
  },
];

describe("envd's Start", () => {
  it('starts and follows in one agent call, then removes the exited process', async () => {
    const { envd, calls, removal } = fixture();
    expect(await events(envd)).toEqual(EXPECTED);
    await removal;
    expect(calls).toEqual(['startFollow', 'remove p1']);
  });

  it("follows an older agent's plain start with a second call", async () => {
    const { envd, calls, removal } = fixture({ plain: true });
    expect(await events(envd)).toEqual(EXPECTED);
    await removal;
    expect(calls).toEqual(['startFollow', 'follow', 'remove p1']);
  });

  it('removes finished E2B processes when the sandbox is full and starts once more', async () => {
    const { envd, calls, removal } = fixture({ fullOnce: true });
    expect(await events(envd)).toEqual(EXPECTED);
    await removal;
    expect(calls).toEqual(['startFollow', 'list', 'remove old', 'startFollow', 'remove p1']);
  });
});
