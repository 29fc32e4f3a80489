/**
 * envd's sendSignal: a SIGKILL answers once the agent reports the process gone (a bounded wait),
 * so an SDK's kill() then list() never shows it; SIGTERM answers once sent. Regression: the
 * Python SDK's check saw the killed pid in commands.list() right after kill() (fresh clone).
 * Regression too: the process's own stream may remove it before that wait reaches the agent (the
 * JS SDK's kill() returned false, fresh-clone CI of 2026-12-07): gone is what the wait waits for.
 */
import { describe, expect, it } from '@jest/globals';
import { createContextValues, type HandlerContext } from '@connectrpc/connect';

import { ProblemError } from '../../../src/errors.js';
import { EnvdProcesses, type ProcessServiceDeps } from '../../../src/e2b/envd/process-service.js';
import { ENVD_CALL } from '../../../src/e2b/envd/sandbox-calls.js';
import { Signal } from '../../../src/e2b/gen/process/process_pb.js';

const REF = { namespace: 'team-a', name: 's' };

/** `removedFirst`: the wait finds the process removed, as when its stream discarded it first. */
function fixture(removedFirst = false): { envd: EnvdProcesses; calls: string[] } {
  const calls: string[] = [];
  const proc = { id: 'p1', pid: 41, state: 'running', command: 'sleep 60' };
  const processes = {
    list: () => Promise.resolve({ processes: [proc] }),
    signal: (_ref: unknown, id: string, name: string) => {
      calls.push(`signal ${id} ${name}`);
      return Promise.resolve(proc);
    },
    wait: (_ref: unknown, id: string, timeoutSeconds: number) => {
      calls.push(`wait ${id} ${timeoutSeconds}`);
      if (removedFirst)
        return Promise.reject(new ProblemError('process-not-found', `no process has the id "${id}"`));
      return Promise.resolve({ ...proc, state: 'exited' });
    },
  };
  const envd = new EnvdProcesses({ processes, execs: {}, log: {} } as unknown as ProcessServiceDeps);
  return { envd, calls };
}

function ctx(): HandlerContext {
  return {
    values: createContextValues().set(ENVD_CALL, { sandbox: REF } as never),
    signal: new AbortController().signal,
    requestHeader: new Headers(),
  } as unknown as HandlerContext;
}

describe("envd's sendSignal", () => {
  it('SIGKILL: answers after the process is waited for (bounded), not before', async () => {
    const { envd, calls } = fixture();
    await envd.impl().sendSignal!(
      { process: { selector: { case: 'pid', value: 41 } }, signal: Signal.SIGKILL } as never,
      ctx(),
    );
    expect(calls).toEqual(['signal p1 SIGKILL', 'wait p1 2']);
  });

  it('SIGKILL: a process removed before the wait (its stream saw the exit first) counts as gone', async () => {
    const { envd, calls } = fixture(true);
    await expect(
      envd.impl().sendSignal!(
        { process: { selector: { case: 'pid', value: 41 } }, signal: Signal.SIGKILL } as never,
        ctx(),
      ),
    ).resolves.toEqual({});
    expect(calls).toEqual(['signal p1 SIGKILL', 'wait p1 2']);
  });

  it('SIGTERM: answers once sent (the process may handle it)', async () => {
    const { envd, calls } = fixture();
    await envd.impl().sendSignal!(
      { process: { selector: { case: 'pid', value: 41 } }, signal: Signal.SIGTERM } as never,
      ctx(),
    );
    expect(calls).toEqual(['signal p1 SIGTERM']);
  });
});
