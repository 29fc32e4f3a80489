/**
 * Code interpreter calls for tests, and the Python interpreter they need: one with IPython, from
 * the venv `make code-venv` builds (.cache/python-stack/venv) or SANDBOX_TEST_PYTHON.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { CodeContext, CodeContextList, CodeEndEvent, CodeEvent } from '@sandbox-platform/api';

import type { RawResponse, TestAgent } from './test-agent.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '../../../..');

/** The bridge script from the sources (the image has it at /opt/sandbox-agent/kernel-bridge.py). */
export const BRIDGE_PATH = join(repo, 'sandbox-agent/src/code/kernel-bridge.py');

/** A Python with IPython, matplotlib and pandas; fails loudly when there is none. */
export function testPython(): string {
  const python = process.env.SANDBOX_TEST_PYTHON ?? join(repo, '.cache/python-stack/venv/bin/python');
  if (!existsSync(python)) {
    throw new Error(`no Python with IPython at ${python}: run "make code-venv" (or set SANDBOX_TEST_PYTHON)`);
  }
  return python;
}

/** The events of a run and its end line. */
export interface RunResult {
  status: number;
  events: CodeEvent[];
  end: CodeEndEvent;
  /** The raw answer (for problems). */
  res: RawResponse;
}

/** POST /v1/code and the parsed NDJSON answer (end is undefined-cast when the answer was a problem). */
export async function runCode(agent: TestAgent, body: Record<string, unknown>): Promise<RunResult> {
  const res = await agent.send({
    method: 'POST',
    path: '/v1/code',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const events =
    res.status === 200
      ? res.body
          .toString('utf8')
          .split('\n')
          .filter((l) => l.length > 0)
          .map((l) => JSON.parse(l) as CodeEvent)
      : [];
  const end = events[events.length - 1] as CodeEndEvent;
  return { status: res.status, events, end, res };
}

/** The text/plain of the run's result, if any. */
export function resultText(r: RunResult): string | undefined {
  const ev = r.events.find((e) => e.type === 'result');
  return ev && ev.type === 'result' ? ev.data['text/plain'] : undefined;
}

/** The concatenated text of one stream. */
export function streamText(r: RunResult, name: 'stdout' | 'stderr'): string {
  return r.events.map((e) => (e.type === name ? e.text : '')).join('');
}

/** A context call: POST (create, interrupt, restart) or DELETE. */
export async function contextCall(
  agent: TestAgent,
  method: 'POST' | 'DELETE' | 'GET',
  path: string,
  body?: unknown,
): Promise<{ status: number; info?: CodeContext; res: RawResponse }> {
  const res = await agent.send({
    method,
    path,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const ok = res.status === 200 || res.status === 201;
  const info = ok && res.body.length > 0 ? (JSON.parse(res.body.toString()) as CodeContext) : undefined;
  return { status: res.status, info, res };
}

/** Waits until a context's listed state is `state` (a kernel busy with a run, stopped after exit()). */
export async function waitForState(
  agent: TestAgent,
  name: string,
  state: CodeContext['state'],
): Promise<void> {
  for (;;) {
    const list = await agent.send({ method: 'GET', path: '/v1/code/contexts' });
    const { contexts } = JSON.parse(list.body.toString()) as CodeContextList;
    if (contexts.some((c) => c.name === name && c.state === state)) return;
    await new Promise((res) => setTimeout(res, 20));
  }
}
