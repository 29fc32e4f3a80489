/**
 * Validation of what crosses the wire into the agent, against the shared contract's schemas
 * (@sandbox-platform/api, crds/src/wire/schemas.ts). Every validator is compiled once, when this
 * module is loaded (at the agent's start), by ajv: the schemas are the contract, so the agent and
 * the gateway cannot disagree about a shape. Failures become 400 `invalid-request` with a detail
 * that names the field and the rule, never the offending value (it may be large or secret).
 *
 * ajv runs with allErrors off (the first error is reported, and a hostile body cannot make the
 * validator collect thousands of errors) and without type coercion. Query strings are text by
 * nature: parameters the schema declares as integers are converted first, and only plain decimal
 * digits are (ajv's own coercion would take " " as 0 and "0x10" as 16).
 */
import {
  execRequestSchema,
  execStdinChunkSchema,
  execStdinCloseSchema,
  type ExecRequest,
  type ExecStdinChunk,
  type ExecStdinClose,
  type ProcessFollowQuery,
  processFollowQuerySchema,
  type ProcessOutputQuery,
  processOutputQuerySchema,
  type ProcessSignalRequest,
  processSignalRequestSchema,
  type ProcessStartQuery,
  processStartQuerySchema,
  type ProcessStartRequest,
  processStartRequestSchema,
  type ProcessWaitQuery,
  processWaitQuerySchema,
  type PtyQuery,
  ptyQuerySchema,
  type PtyResizeMessage,
  ptyResizeMessageSchema,
} from '@sandbox-platform/api';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

import { HttpProblem } from './problem.js';

const ajv = new Ajv({ strict: true, allErrors: false, coerceTypes: false });

/** The compiled validators of every request shape the agent accepts. */
export const VALIDATORS = {
  execRequest: ajv.compile<ExecRequest>(execRequestSchema),
  stdinChunk: ajv.compile<ExecStdinChunk>(execStdinChunkSchema),
  stdinClose: ajv.compile<ExecStdinClose>(execStdinCloseSchema),
  processStart: ajv.compile<ProcessStartRequest>(processStartRequestSchema),
  processStartQuery: ajv.compile<ProcessStartQuery>(processStartQuerySchema),
  processSignal: ajv.compile<ProcessSignalRequest>(processSignalRequestSchema),
  processOutputQuery: ajv.compile<ProcessOutputQuery>(processOutputQuerySchema),
  processFollowQuery: ajv.compile<ProcessFollowQuery>(processFollowQuerySchema),
  processWaitQuery: ajv.compile<ProcessWaitQuery>(processWaitQuerySchema),
  ptyQuery: ajv.compile<PtyQuery>(ptyQuerySchema),
  ptyResize: ajv.compile<PtyResizeMessage>(ptyResizeMessageSchema),
} as const;

/** The value as T when it matches; otherwise 400 `invalid-request` naming the first problem. */
export function validated<T>(validate: ValidateFunction<T>, value: unknown, what = 'the body'): T {
  if (validate(value)) return value;
  throw new HttpProblem('invalid-request', describeError(validate.errors?.[0], what));
}

/** A schema of a query string: an object of integer and string parameters. */
interface QuerySchema {
  properties: Readonly<Record<string, { type: string }>>;
}

/** Decimal digits only, at most 16 (beyond Number.MAX_SAFE_INTEGER the schema's maximum refuses). */
const DIGITS = /^[0-9]{1,16}$/;

/**
 * The query string as the object its schema describes, then validated: integer parameters must
 * be plain decimal digits. A name given twice is refused: which one would win is a guess a client
 * should not have to make.
 */
export function validatedQuery<T>(
  validate: ValidateFunction<T>,
  schema: QuerySchema,
  search: URLSearchParams,
): T {
  const out: Record<string, string | number> = {};
  for (const [name, value] of search) {
    if (Object.hasOwn(out, name))
      throw new HttpProblem('invalid-request', `query parameter ${name} is given twice`);
    const integer = Object.hasOwn(schema.properties, name) && schema.properties[name]?.type === 'integer';
    if (integer && !DIGITS.test(value))
      throw new HttpProblem('invalid-request', `${name} must be an integer`);
    out[name] = integer ? Number(value) : value;
  }
  return validated(validate, out, 'the query');
}

const ARTICLE: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
};

/** One ajv error as a sentence: which field, which rule. */
export function describeError(error: ErrorObject | undefined, what: string): string {
  if (!error) return `${what} is invalid`;
  const field = error.instancePath ? error.instancePath.slice(1).replaceAll('/', '.') : what;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `${String(params.missingProperty)} is required`;
    case 'additionalProperties':
      return `unknown ${what === 'the query' && !error.instancePath ? 'parameter' : 'field'}: ${error.instancePath ? `${field}.` : ''}${String(params.additionalProperty)}`;
    case 'type':
      return `${field} must be ${ARTICLE[String(params.type)] ?? String(params.type)}`;
    case 'enum':
      return `${field} must be one of ${(params.allowedValues as unknown[]).join(', ')}`;
    case 'dependencies':
      return `${String(params.property)} needs ${String(params.missingProperty)}`;
    default:
      return patternOrRange(error, field, params);
  }
}

function patternOrRange(error: ErrorObject, field: string, params: Record<string, unknown>): string {
  if (error.propertyName !== undefined)
    return `${field} name "${error.propertyName}" is not a valid variable name`;
  if (error.keyword === 'pattern' && String(params.pattern).includes('\\u0000'))
    return `${field} must not contain NUL characters`;
  if (error.keyword === 'minLength' && params.limit === 1) return `${field} must not be empty`;
  if (error.keyword === 'maxProperties') return `${field} must have at most ${String(params.limit)} entries`;
  return `${field} ${error.message ?? 'is invalid'}`;
}
