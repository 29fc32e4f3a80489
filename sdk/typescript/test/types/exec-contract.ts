// The SDK restates the gateway's exec contract by hand (the package has no dependencies, so it
// cannot import @sandbox-platform/api); this file keeps the two in step at compile time. It is
// checked by `tsc -p sdk/typescript/tsconfig.test.json` and never run: a field added, removed or
// retyped on one side only is a type error here. The public types come from the JSON Schemas of
// crds/src/public/ (`make generate`); the stream's lines are the agent's own events, which the
// gateway checks against crds/src/wire's schemas and passes on (api-gateway ndjson-guard.ts).
import type {
  ExecExitEvent as WireExecExitEvent,
  ExecOutputEvent as WireExecOutputEvent,
  PublicExecRequest,
  PublicExecResult,
} from '@sandbox-platform/api';

import type { ExecExitEvent, ExecOutputEvent, ExecRequest, ExecResult } from '../../src/index.js';

/** True only when A and B are the same type (optional, readonly and index signatures included). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only when given `true`. */
function assertType<T extends true>(): T | undefined {
  return undefined;
}

export const execContract = [
  assertType<Equal<ExecRequest, PublicExecRequest>>(),
  assertType<Equal<ExecResult, PublicExecResult>>(),
  assertType<Equal<ExecOutputEvent, WireExecOutputEvent>>(),
  assertType<Equal<ExecExitEvent, WireExecExitEvent>>(),
];
