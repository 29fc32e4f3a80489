/**
 * @sandbox-platform/sandbox-agent: the in-pod agent. Other packages use startAgent to run a real
 * agent in their tests; the container runs main.ts.
 */
export { startAgent, type RunningAgent, type StartOptions } from './agent.js';
export {
  agentConfig,
  type AgentConfig,
  type AgentConfigInput,
  ConfigError,
  DEFAULT_CONFIG,
  ENV,
  loadConfig,
  MIN_TOKEN_LENGTH,
} from './config.js';
export type { ExecResponse } from './exec/observers.js';
export { DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS } from './exec/request.js';
export { PROBLEM_BASE, PROBLEMS, type ProblemSlug } from './http/problem.js';
export { LOG_LEVELS, type LogLevel } from './log.js';
