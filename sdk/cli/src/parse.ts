/** Parsing of argument values: durations, KEY=VALUE pairs, command lines, session paths. */
import { UsageError } from './errors.js';

/** Seconds from "30", "30s", "5m" or "1h". */
export function seconds(value: string, flag: string): number {
  const m = /^(\d+)(s|m|h)?$/.exec(value.trim());
  if (!m?.[1]) throw new UsageError(`${flag}: "${value}" is not a duration (e.g. 30, 30s, 5m, 1h)`);
  const n = Number(m[1]);
  return m[2] === 'h' ? n * 3600 : m[2] === 'm' ? n * 60 : n;
}

/** {K: V} from repeated KEY=VALUE flags. */
export function keyValues(values: string[] | undefined, flag: string): Record<string, string> | undefined {
  if (!values?.length) return undefined;
  const out: Record<string, string> = {};
  for (const v of values) {
    const eq = v.indexOf('=');
    if (eq <= 0) throw new UsageError(`${flag}: "${v}" is not KEY=VALUE`);
    out[v.slice(0, eq)] = v.slice(eq + 1);
  }
  return out;
}

/**
 * The command line sent to the session's bash. One argument is taken as a command line as is
 * (`sbx exec s -- 'ls | wc -l'`); several are quoted word by word, so they arrive as the argv
 * they were (`sbx exec s -- printf '%s\n' "a b"`).
 */
export function commandLine(words: string[]): string {
  if (words.length === 1) return words[0] ?? '';
  return words.map(shellQuote).join(' ');
}

/** Quotes a word for bash when it needs it. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** One side of `cp`: a local path, or a session and a workspace path. */
export type CpTarget = { kind: 'local'; path: string } | { kind: 'remote'; session: string; path: string };

const WORKSPACE = '/workspace';

/**
 * `NAME:PATH` is a session path (NAME a DNS label); anything else is local (write `./a:b` for a
 * local file with a colon). Session paths are relative to /workspace; `/workspace/...` is accepted.
 */
export function cpTarget(arg: string): CpTarget {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?):(.*)$/.exec(arg);
  if (!m?.[1] || arg.startsWith('.') || arg.startsWith('/')) return { kind: 'local', path: arg };
  return { kind: 'remote', session: m[1], path: workspacePath(m[3] ?? '', arg) };
}

function workspacePath(path: string, arg: string): string {
  if (path === WORKSPACE || path === `${WORKSPACE}/`) return '';
  if (path.startsWith(`${WORKSPACE}/`)) return path.slice(WORKSPACE.length + 1);
  if (path.startsWith('/')) {
    throw new UsageError(
      `${arg}: session paths are under ${WORKSPACE} (absolute paths elsewhere are not reachable)`,
    );
  }
  return path.replace(/^\.\//, '');
}
