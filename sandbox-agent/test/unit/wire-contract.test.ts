/**
 * The agent's wire contract: every schema compiles under ajv's strict mode (as both ends compile
 * them), examples of each shape validate and near misses do not, and the vocabulary tables agree
 * with the schemas.
 */
import { describe, expect, it } from '@jest/globals';
import { Ajv } from 'ajv';

import {
  AGENT_PATHS,
  AGENT_PROBLEMS,
  agentProblemSchema,
  agentProblemSlug,
  agentProblemType,
  execExitEventSchema,
  execRequestSchema,
  execStdinChunkSchema,
  PROBLEM_BASE,
  PROCESS_SIGNALS,
  processInfoSchema,
  processOutputQuerySchema,
  processPath,
  processSignalRequestSchema,
  ptyResizeMessageSchema,
  WIRE_SCHEMAS,
} from '@sandbox-platform/api';

const ajv = new Ajv({ strict: true, allErrors: true });
const queries = new Ajv({ strict: true, coerceTypes: true });

describe('agent wire contract', () => {
  it.each(Object.entries(WIRE_SCHEMAS))('%s compiles under ajv strict mode', (_name, schema) => {
    expect(() => ajv.compile(schema)).not.toThrow();
  });

  it('closes every object of every schema (an unknown field is an error on both ends)', () => {
    const open: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (!node || typeof node !== 'object') return;
      const record = node as Record<string, unknown>;
      if (record.type === 'object' && record.additionalProperties === undefined) open.push(at);
      for (const [key, value] of Object.entries(record)) walk(value, `${at}/${key}`);
    };
    for (const [name, schema] of Object.entries(WIRE_SCHEMAS)) walk(schema, name);
    expect(open).toEqual([]);
  });

  it('accepts exec requests with stdin and refuses a stdinEncoding without stdin', () => {
    const validate = ajv.compile(execRequestSchema);
    expect(validate({ command: 'cat', stdin: 'aGk=', stdinEncoding: 'base64' })).toBe(true);
    expect(validate({ command: 'cat', stdinEncoding: 'base64' })).toBe(false);
    expect(validate({ command: 'a\u0000b' })).toBe(false);
    expect(validate({ command: 'true', env: { 'BAD-NAME': 'x' } })).toBe(false);
    expect(validate({ command: 'true', timeoutSeconds: 301 })).toBe(false);
    expect(validate({ command: 'true', extra: 1 })).toBe(false);
  });

  it('describes the exit event with an optional stdinError and stdin lines', () => {
    const exit = ajv.compile(execExitEventSchema);
    const base = {
      type: 'exit',
      exitCode: 0,
      durationMs: 1,
      truncated: false,
      timedOut: false,
      shellReset: false,
    };
    expect(exit(base)).toBe(true);
    expect(exit({ ...base, stdinError: 'line 2 is not JSON' })).toBe(true);
    expect(exit({ ...base, exitCode: 256 })).toBe(false);
    const chunk = ajv.compile(execStdinChunkSchema);
    expect(chunk({ type: 'stdin', data: 'x' })).toBe(true);
    expect(chunk({ type: 'stdin', data: 'x', encoding: 'hex' })).toBe(false);
  });

  it('allows exactly the signals of PROCESS_SIGNALS', () => {
    const validate = ajv.compile(processSignalRequestSchema);
    for (const signal of PROCESS_SIGNALS) expect(validate({ signal })).toBe(true);
    expect(validate({ signal: 'SIGSEGV' })).toBe(false);
    expect(validate({ signal: 'TERM' })).toBe(false);
  });

  it('validates a process as the agent describes it, exit fields optional', () => {
    const validate = ajv.compile(processInfoSchema);
    const running = {
      id: '0123456789ab',
      pid: 42,
      command: 'sleep 1',
      state: 'running',
      startedAt: '2026-01-01T00:00:00.000Z',
      stdout: { size: 0, dropped: 0 },
      stderr: { size: 10, dropped: 0 },
    };
    expect(validate(running)).toBe(true);
    expect(validate({ ...running, state: 'exited', exitCode: 143, signal: 'SIGTERM', exitedAt: 'x' })).toBe(
      true,
    );
    expect(validate({ ...running, id: 'ABC' })).toBe(false);
    expect(validate({ ...running, exitCode: null })).toBe(false);
  });

  it('coerces query strings to integers and refuses non-integers', () => {
    const validate = queries.compile(processOutputQuerySchema);
    const query: Record<string, unknown> = { stdoutOffset: '10', maxBytes: '5' };
    expect(validate(query)).toBe(true);
    expect(query).toEqual({ stdoutOffset: 10, maxBytes: 5 });
    expect(validate({ stdoutOffset: '1.5' })).toBe(false);
    expect(validate({ maxBytes: '0' })).toBe(false);
    expect(validate({ other: '1' })).toBe(false);
  });

  it('bounds terminal sizes', () => {
    const validate = ajv.compile(ptyResizeMessageSchema);
    expect(validate({ type: 'resize', cols: 120, rows: 40 })).toBe(true);
    expect(validate({ type: 'resize', cols: 0, rows: 40 })).toBe(false);
    expect(validate({ type: 'resize', cols: 1001, rows: 40 })).toBe(false);
  });

  it('spells every problem slug as the problem schema expects, with a 4xx/5xx status', () => {
    const validate = ajv.compile(agentProblemSchema);
    for (const [slug, { status, title }] of Object.entries(AGENT_PROBLEMS)) {
      const type = agentProblemType(slug as keyof typeof AGENT_PROBLEMS);
      expect(validate({ type, title, status, detail: 'x' })).toBe(true);
      expect(agentProblemSlug(type)).toBe(slug);
    }
    expect(agentProblemSlug(`${PROBLEM_BASE}no-such-slug`)).toBeUndefined();
    expect(agentProblemSlug(`${PROBLEM_BASE}toString`)).toBeUndefined();
    expect(agentProblemSlug(42)).toBeUndefined();
  });

  it('builds process paths with the id as one segment', () => {
    expect(processPath('0123456789ab')).toBe(`${AGENT_PATHS.processes}/0123456789ab`);
    expect(processPath('0123456789ab', 'output/stream')).toBe('/v1/processes/0123456789ab/output/stream');
    expect(processPath('../x')).toBe('/v1/processes/..%2Fx');
  });
});
