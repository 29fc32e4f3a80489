/**
 * The agent's JSON answers as typed values. The agent runs inside the sandbox, so what it sends is
 * untrusted: every answer is (1) bounded in bytes by the caller, (2) scanned for nesting depth and
 * number of members before JSON.parse when it is large enough for those to matter (4 MB of
 * `[[[[...` makes JSON.parse build two million arrays: hundreds of MiB), (3) parsed, and (4)
 * validated with ajv against the agent's wire contract (@sandbox-platform/api, crds/src/wire),
 * never cast. Any failure is an AgentProtocolError: the caller answers 502 `agent-protocol-error`.
 * Error messages name the rule that failed, never the answer's content.
 */
import {
  agentProblemSchema,
  execExitEventSchema,
  execOutputEventSchema,
  execResultSchema,
  writeFileResultSchema,
} from '@sandbox-platform/api';
import { Ajv, type ValidateFunction } from 'ajv';

import type { ExecResult, ExecStreamEvent, WriteFileResult } from '../types.js';
import { AgentProtocolError } from './agent-wire.js';

/**
 * Answers up to this size are parsed without the scan: whatever their shape, JSON.parse of 16 KiB
 * allocates at most a few MiB, and the exec hot path (answers of about 200 bytes) skips the scan.
 */
export const SCAN_THRESHOLD_BYTES = 16 * 1024;
/** Deepest nesting accepted (the contract's answers are flat objects: depth 1). */
export const MAX_JSON_DEPTH = 8;
/** Most `{ [ , :` outside strings accepted (an exec result has 17; each is an allocation in JSON.parse). */
export const MAX_JSON_TOKENS = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Index of the quote closing a string whose content starts at `i`; -1 when it does not close. */
function endOfString(buf: Buffer, i: number): number {
  for (let from = i; ;) {
    const q = buf.indexOf(QUOTE, from);
    if (q < 0) return -1;
    let escapes = 0;
    for (let b = q - 1; buf[b] === BACKSLASH; b--) escapes++; // buf[i - 1] is the opening quote
    if (escapes % 2 === 0) return q;
    from = q + 1;
  }
}

/**
 * Throws AgentProtocolError when the JSON text nests deeper than `maxDepth` or has more than
 * `maxTokens` structural tokens outside strings. Linear: strings are skipped with indexOf.
 */
export function checkJsonShape(buf: Buffer, maxDepth = MAX_JSON_DEPTH, maxTokens = MAX_JSON_TOKENS): void {
  let depth = 0;
  let tokens = 0;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (c === QUOTE) {
      i = endOfString(buf, i + 1);
      if (i < 0) throw new AgentProtocolError('answer is not valid JSON (unterminated string)');
      continue;
    }
    const t = TOKEN[c];
    if (t === undefined) continue;
    depth += t;
    if (depth > maxDepth) throw new AgentProtocolError(`answer nests deeper than ${maxDepth}`);
    if (t >= 0 && ++tokens > maxTokens)
      throw new AgentProtocolError(`answer has more than ${maxTokens} members`);
  }
}

/** Structural bytes and their effect on the depth: `{ [` open (+1), `} ]` close (-1), `, :` (0). */
const TOKEN: Record<number, number> = { 0x7b: 1, 0x5b: 1, 0x7d: -1, 0x5d: -1, 0x2c: 0, 0x3a: 0 };

/** Parses and validates one JSON answer (or NDJSON line) of the agent. */
export function parseAgentJson<T>(bytes: Buffer, validate: ValidateFunction<T>): T {
  return checkSchema(parseBounded(bytes), validate);
}

/** JSON.parse after the shape check (for answers over SCAN_THRESHOLD_BYTES). */
export function parseBounded(bytes: Buffer): unknown {
  if (bytes.length > SCAN_THRESHOLD_BYTES) checkJsonShape(bytes);
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    throw new AgentProtocolError('answer is not valid JSON');
  }
}

/** The value as T when it matches the schema; AgentProtocolError otherwise. */
export function checkSchema<T>(value: unknown, validate: ValidateFunction<T>): T {
  if (!validate(value)) throw new AgentProtocolError(`answer ${schemaError(validate)}`);
  return value;
}

/** "/exitCode must be integer": where and which rule, never the offending value. */
function schemaError(validate: ValidateFunction): string {
  const e = validate.errors?.[0];
  if (!e) return 'does not match the contract';
  const extra = (e.params as { additionalProperty?: unknown }).additionalProperty;
  const what = typeof extra === 'string' ? 'has an unknown field' : (e.message ?? 'is invalid');
  return `${e.instancePath || '(root)'} ${what}`;
}

/** Output event of a stream. */
export type OutputEvent = Extract<ExecStreamEvent, { type: 'stdout' | 'stderr' }>;
/** Exit event of a stream. */
export type ExitEvent = Extract<ExecStreamEvent, { type: 'exit' }>;

// The schemas are the agent's wire contract (@sandbox-platform/api, crds/src/wire): the agent
// validates its requests with the same objects.
const ajv = new Ajv({ allErrors: false, strict: true });
export const validateExecResult: ValidateFunction<ExecResult> = ajv.compile<ExecResult>(execResultSchema);
export const validateOutputEvent: ValidateFunction<OutputEvent> =
  ajv.compile<OutputEvent>(execOutputEventSchema);
export const validateExitEvent: ValidateFunction<ExitEvent> = ajv.compile<ExitEvent>(execExitEventSchema);
export const validateWriteResult: ValidateFunction<WriteFileResult> =
  ajv.compile<WriteFileResult>(writeFileResultSchema);
/**
 * An error answer: only `type` (which problem) and `detail` are used, so only they are checked
 * (looser than agentProblemSchema: a problem missing its title is still the agent's answer).
 */
const problemSchema = {
  type: 'object',
  properties: {
    type: agentProblemSchema.properties.type,
    detail: agentProblemSchema.properties.detail,
  },
} as const;
export const validateProblem: ValidateFunction<{ type?: string; detail?: string }> = ajv.compile<{
  type?: string;
  detail?: string;
}>(problemSchema);

/** Decoded size of an output field in bytes, without decoding it. */
export function outputBytes(data: string, enc: 'utf-8' | 'base64'): number {
  if (enc === 'base64') {
    const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
    return Math.floor((data.length * 3) / 4) - pad;
  }
  return Buffer.byteLength(data, 'utf8');
}

/**
 * Throws AgentProtocolError when an output field decodes to more than `cap` bytes: the agent caps
 * each stream, so an answer over the cap does not come from an agent honouring the contract.
 * Short strings are accepted without measuring (a UTF-16 unit is at most 3 UTF-8 bytes).
 */
export function checkOutputCap(data: string, enc: 'utf-8' | 'base64', cap: number, field: string): void {
  if (data.length * 3 <= cap) return;
  const n = outputBytes(data, enc);
  if (n > cap) throw new AgentProtocolError(`${field} is ${n} bytes, over the output cap of ${cap}`);
}
