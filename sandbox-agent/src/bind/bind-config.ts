/**
 * The warm-Pod part of the agent's configuration (docs/adr/0016-warm-pools.md): read from the
 * environment only when SANDBOX_AGENT_BIND_KEY is set, which the operator does for the Pods of a
 * SandboxPool and for nothing else. Such an agent starts without a token.
 */
import { BIND_ENV, BIND_STATE_FILE, bindVerifyKey } from '@sandbox-platform/api';

import type { Identity } from './bind-state.js';

/** Settings of an agent that starts unbound. */
export interface BindConfig {
  /** The operator's bind verification key (Ed25519 public key, 64 hex characters). */
  readonly key: string;
  /** This Pod (downward API): a bind must name exactly it. */
  readonly pod: Identity;
  /** Where the accepted bind is kept. */
  readonly stateFile: string;
}

/**
 * The bind settings when SANDBOX_AGENT_BIND_KEY is set (missing Pod identity appended to
 * `problems`; the rest is checked by {@link bindConfigProblems} with the whole config), else
 * undefined.
 */
export function bindConfigFrom(env: NodeJS.ProcessEnv, problems: string[]): BindConfig | undefined {
  const key = env[BIND_ENV.key]?.trim();
  if (!key) return undefined;
  const required = (name: string): string => {
    const value = env[name]?.trim();
    if (!value) problems.push(`${name} must be set when ${BIND_ENV.key} is (the downward API gives it)`);
    return value ?? '';
  };
  const config: BindConfig = {
    key,
    pod: {
      namespace: required(BIND_ENV.podNamespace),
      name: required(BIND_ENV.podName),
      uid: required(BIND_ENV.podUID),
    },
    stateFile: env[BIND_ENV.stateFile]?.trim() || BIND_STATE_FILE,
  };
  return config;
}

/** What is wrong with bind settings (empty when nothing). */
export function bindConfigProblems(config: BindConfig): string[] {
  try {
    bindVerifyKey(config.key);
  } catch (err) {
    return [`${BIND_ENV.key}: ${(err as Error).message}`];
  }
  return config.stateFile.startsWith('/') ? [] : [`${BIND_ENV.stateFile} must be an absolute path`];
}
