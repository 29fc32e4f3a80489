/**
 * The agent's answers of the background-process calls (ADR 0018), checked like every other agent
 * answer (agent-json.ts): bounded in bytes by the caller, shape-scanned when large, parsed, and
 * validated against the wire contract of @sandbox-platform/api with ajv. A violation is an
 * AgentProtocolError (502 `agent-protocol-error`).
 */
import {
  exitEventSchema,
  processInfoSchema,
  processListSchema,
  processOutputEventSchema,
  processOutputSchema,
  type ExitEvent,
  type ProcessInfo,
  type ProcessList,
  type ProcessOutput,
  type ProcessOutputEvent,
} from '@sandbox-platform/api';
import { Ajv, type ValidateFunction } from 'ajv';

import { MAX_JSON_DEPTH, SCAN_THRESHOLD_BYTES, checkJsonShape, checkSchema } from './agent-json.js';
import { AgentProtocolError } from './agent-wire.js';

/**
 * Most structural tokens in a process answer: a list holds at most the agent's maximum of processes
 * (16 by default), each about 40 tokens; 4096 leaves room for a raised maximum and still bounds
 * what JSON.parse allocates.
 */
const MAX_PROCESS_TOKENS = 4096;

const ajv = new Ajv({ allErrors: false, strict: true });
export const validateProcessInfo: ValidateFunction<ProcessInfo> = ajv.compile<ProcessInfo>(processInfoSchema);
export const validateProcessList: ValidateFunction<ProcessList> = ajv.compile<ProcessList>(processListSchema);
export const validateProcessOutput: ValidateFunction<ProcessOutput> =
  ajv.compile<ProcessOutput>(processOutputSchema);
export const validateProcessOutputEvent: ValidateFunction<ProcessOutputEvent> =
  ajv.compile<ProcessOutputEvent>(processOutputEventSchema);
export const validateExitLine: ValidateFunction<ExitEvent> = ajv.compile<ExitEvent>(exitEventSchema);

/** Parses and validates one JSON answer of a process call. */
export function parseProcessJson<T>(bytes: Buffer, validate: ValidateFunction<T>): T {
  if (bytes.length > SCAN_THRESHOLD_BYTES) checkJsonShape(bytes, MAX_JSON_DEPTH, MAX_PROCESS_TOKENS);
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    throw new AgentProtocolError('answer is not valid JSON');
  }
  return checkSchema(value, validate);
}
