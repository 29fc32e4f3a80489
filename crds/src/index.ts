/** @sandbox-platform/api: the SandboxSession API shared by the operator, the gateway and the tests. */
export * from './constants.js';
export * from './names.js';
export * from './token.js';
export * from './master-key.js';
export * from './pool.js';
export * from './bind.js';
export * from './ownership.js';
export * from './telemetry-server.js';
export * from './otel-config.js';
export * from './version.js';
export * from './log-line.js';
export type * from './generated/types.js';
export { sandboxSessionSchema } from './generated/schema.js';
export type * from './generated/pool-types.js';
export { sandboxPoolSchema } from './generated/pool-schema.js';
export * from './wire/index.js';
