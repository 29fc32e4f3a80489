/**
 * The lines of the kernel bridge (kernel-bridge.py), checked before use: the bridge runs in the
 * sandbox as its user, so what it writes is hostile input like any output of the sandbox. Each
 * line is parsed and validated against the wire contract's event schemas plus the execution id;
 * a line that does not match is a protocol violation (the caller ends the kernel).
 */
import {
  codeDataEventSchema,
  codeDroppedSchema,
  codeErrorEventSchema,
  codeStreamEventSchema,
  type CodeDataEvent,
  type CodeDropped,
  type CodeErrorEvent,
  type CodeStreamEvent,
} from '@sandbox-platform/api';
import { Ajv, type ValidateFunction } from 'ajv';

/** The bridge is up: its kernel answered. */
export interface ReadyLine {
  type: 'ready';
  language: string;
  version: string;
}

/** The bridge failed and exits. */
export interface FatalLine {
  type: 'fatal';
  message: string;
}

/** An execution is complete: the kernel's reply and its idle status arrived. */
export interface DoneLine {
  id: string;
  type: 'done';
  status: 'ok' | 'error' | 'aborted';
  executionCount?: number;
  dropped: CodeDropped;
}

/** An event of one execution, as the wire contract has it, with the execution's id. */
export type EventLine = (CodeStreamEvent | CodeDataEvent | CodeErrorEvent) & { id: string };

/** Any line of the bridge. */
export type BridgeLine = ReadyLine | FatalLine | DoneLine | EventLine;

/** The bridge broke the protocol. */
export class BridgeProtocolError extends Error {
  override readonly name = 'BridgeProtocolError';
}

const id = { type: 'string', minLength: 1, maxLength: 64 } as const;
const short = { type: 'string', maxLength: 4096 } as const;

/** A wire event schema with the execution id added. */
function withId<S extends { required: readonly string[]; properties: object }>(schema: S): object {
  return { ...schema, required: [...schema.required, 'id'], properties: { ...schema.properties, id } };
}

const ajv = new Ajv({ strict: true, allErrors: false });

const VALIDATORS: Record<string, ValidateFunction> = {
  ready: ajv.compile({
    type: 'object',
    additionalProperties: false,
    required: ['type', 'language', 'version'],
    properties: { type: { const: 'ready' }, language: short, version: short },
  }),
  fatal: ajv.compile({
    type: 'object',
    additionalProperties: false,
    required: ['type', 'message'],
    properties: { type: { const: 'fatal' }, message: short },
  }),
  done: ajv.compile({
    type: 'object',
    additionalProperties: false,
    required: ['id', 'type', 'status', 'dropped'],
    properties: {
      id,
      type: { const: 'done' },
      status: { type: 'string', enum: ['ok', 'error', 'aborted'] },
      executionCount: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      dropped: codeDroppedSchema,
    },
  }),
  stream: ajv.compile(withId(codeStreamEventSchema)),
  data: ajv.compile(withId(codeDataEventSchema)),
  error: ajv.compile(withId(codeErrorEventSchema)),
};

const KIND: Record<string, string> = {
  ready: 'ready',
  fatal: 'fatal',
  done: 'done',
  stdout: 'stream',
  stderr: 'stream',
  result: 'data',
  display: 'data',
  error: 'error',
};

/** Parses and checks one line; throws BridgeProtocolError when it is not one of the protocol. */
export function parseBridgeLine(raw: Buffer): BridgeLine {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new BridgeProtocolError('a line is not JSON');
  }
  const type = (value as { type?: unknown } | null)?.type;
  const validate = validatorOf(type);
  if (!validate(value)) {
    const e = validate.errors?.[0];
    throw new BridgeProtocolError(
      `a ${String(type)} line is invalid: ${e?.instancePath ?? ''} ${e?.message ?? ''}`,
    );
  }
  return value as BridgeLine;
}

function validatorOf(type: unknown): ValidateFunction {
  const kind = typeof type === 'string' && Object.hasOwn(KIND, type) ? KIND[type] : undefined;
  const validate = kind === undefined ? undefined : VALIDATORS[kind];
  if (!validate) throw new BridgeProtocolError('a line has an unknown type');
  return validate;
}
