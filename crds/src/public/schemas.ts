/**
 * The public API's schemas that have generated types (./generated/types.ts, written by
 * crds/scripts/generate-wire.mjs; `make verify` fails on drift). Change a shape, then run
 * `make generate`.
 */
import { publicExecRequestSchema, publicExecResultSchema } from './exec.js';

/** Type name -> schema, in the order of the generated file. */
export const PUBLIC_SCHEMAS = {
  PublicExecRequest: publicExecRequestSchema,
  PublicExecResult: publicExecResultSchema,
} as const;
