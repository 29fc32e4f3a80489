/**
 * Reading environment keys, shared by the proxy's and the drop reporter's configuration (config.ts,
 * drops/config.ts): each throws naming the key at fault.
 */

/** An integer key with its default and bounds. */
export function int(env: NodeJS.ProcessEnv, key: string, [def, min, max]: [number, number, number]): number {
  const raw = env[key];
  const v = raw === undefined || raw === '' ? def : Number(raw);
  if (!Number.isInteger(v) || v < min || v > max)
    throw new Error(`${key} must be an integer in ${min}..${max}, got ${raw}`);
  return v;
}

/** A key that must be set and not empty. */
export function required(env: NodeJS.ProcessEnv, key: string): string {
  const v = env[key];
  if (!v) throw new Error(`${key} is required`);
  return v;
}

/** LOG_LEVEL (info): error, warn, info or debug. */
export function logLevel(env: NodeJS.ProcessEnv): 'error' | 'warn' | 'info' | 'debug' {
  const level = env.LOG_LEVEL || 'info';
  if (!['error', 'warn', 'info', 'debug'].includes(level)) throw new Error(`LOG_LEVEL invalid: ${level}`);
  return level as 'error' | 'warn' | 'info' | 'debug';
}
