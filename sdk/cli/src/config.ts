/**
 * Settings: the gateway URL, API key, namespace and output format, from flags, then the
 * environment (SANDBOX_URL, SANDBOX_KEY, SANDBOX_NAMESPACE), then the config file
 * ($SANDBOX_CONFIG, else $XDG_CONFIG_HOME/sbx/config.yaml, else ~/.config/sbx/config.yaml).
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

import { parse, stringify } from 'yaml';

import { UsageError } from './errors.js';

/** Output formats of --output. */
export const OUTPUTS = ['table', 'json', 'yaml', 'name'] as const;
export type Output = (typeof OUTPUTS)[number];

/** What the config file may hold (all optional). */
export interface FileConfig {
  url?: string;
  key?: string;
  namespace?: string;
  output?: Output;
}

/** The keys of the config file, for `config set` and validation. */
export const CONFIG_KEYS = ['url', 'key', 'namespace', 'output'] as const;
export type ConfigKey = (typeof CONFIG_KEYS)[number];

/** Resolved settings of one run. */
export interface Settings {
  url: string | undefined;
  key: string | undefined;
  namespace: string | undefined;
  output: Output;
  /** Where the config file is (whether or not it exists). */
  configPath: string;
}

/** Global flags as parsed. */
export interface GlobalFlags {
  url?: string | undefined;
  key?: string | undefined;
  namespace?: string | undefined;
  output?: string | undefined;
  config?: string | undefined;
}

/** The config file's path. */
export function configPath(env: Record<string, string | undefined>, flag?: string): string {
  if (flag) return flag;
  if (env.SANDBOX_CONFIG) return env.SANDBOX_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'sbx', 'config.yaml');
}

/** Reads the config file; a missing file is an empty config, a malformed one a UsageError. */
export function readConfigFile(path: string): FileConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return {};
    throw err;
  }
  let value: unknown;
  try {
    value = parse(text) as unknown;
  } catch (err) {
    throw new UsageError(`config file ${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  return validateConfig(value ?? {}, path);
}

function validateConfig(value: unknown, path: string): FileConfig {
  if (typeof value !== 'object' || Array.isArray(value) || value === null) {
    throw new UsageError(`config file ${path} must be a mapping of ${CONFIG_KEYS.join(', ')}`);
  }
  const out: FileConfig = {};
  for (const [k, v] of Object.entries(value)) {
    if (!(CONFIG_KEYS as readonly string[]).includes(k)) {
      throw new UsageError(`config file ${path}: unknown key "${k}" (known: ${CONFIG_KEYS.join(', ')})`);
    }
    if (typeof v !== 'string') throw new UsageError(`config file ${path}: "${k}" must be a string`);
    out[k as ConfigKey] = k === 'output' ? checkOutput(v) : (v as Output);
  }
  return out;
}

/** Validates an --output value. */
export function checkOutput(value: string): Output {
  if ((OUTPUTS as readonly string[]).includes(value)) return value as Output;
  throw new UsageError(`unknown output format "${value}" (use ${OUTPUTS.join(', ')})`);
}

/** Flags, then environment, then file. */
export function resolveSettings(flags: GlobalFlags, env: Record<string, string | undefined>): Settings {
  const path = configPath(env, flags.config);
  const file = readConfigFile(path);
  return {
    url: flags.url ?? (env.SANDBOX_URL || undefined) ?? file.url,
    key: flags.key ?? (env.SANDBOX_KEY || undefined) ?? file.key,
    namespace: flags.namespace ?? (env.SANDBOX_NAMESPACE || undefined) ?? file.namespace,
    output: checkOutput(flags.output ?? file.output ?? 'table'),
    configPath: path,
  };
}

/** Sets one key in the config file (created with mode 0600: it may hold the API key). */
export function setConfigValue(path: string, key: string, value: string): void {
  if (!(CONFIG_KEYS as readonly string[]).includes(key)) {
    throw new UsageError(`unknown config key "${key}" (known: ${CONFIG_KEYS.join(', ')})`);
  }
  if (key === 'output') checkOutput(value);
  const current = readConfigFile(path);
  const next = { ...current, [key]: value };
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, stringify(next), { mode: 0o600 });
  chmodSync(path, 0o600);
}

/** The config for display, the key redacted. */
export function redacted(settings: Settings): Record<string, string> {
  const out: Record<string, string> = { configFile: settings.configPath };
  if (settings.url) out.url = settings.url;
  if (settings.key) out.key = `(set, ${settings.key.length} characters)`;
  if (settings.namespace) out.namespace = settings.namespace;
  out.output = settings.output;
  return out;
}
