/** The gateway's public API contract, schema first (issue 33): schemas, bounds, generated types. */
export type * from './generated/types.js';
export * from './exec.js';
export * from './schemas.js';
