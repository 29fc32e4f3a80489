/** The proxy's log: one JSON line per entry in the platform's shape (crds/src/log-line.ts). */
import { formatLogLine } from '@sandbox-platform/api';

import type { Log } from './kube/watch.js';

const LEVELS = { error: 0, warn: 1, info: 2, debug: 3 } as const;

/** A logger writing to stdout at or above `level`. */
export function createLogger(
  level: keyof typeof LEVELS,
): Log & { error(msg: string, f?: Record<string, unknown>): void } {
  const write = (l: keyof typeof LEVELS, msg: string, fields?: Record<string, unknown>): void => {
    if (LEVELS[l] <= LEVELS[level]) {
      process.stdout.write(`${formatLogLine({ service: 'sandbox-egress-proxy', level: l, msg }, fields)}\n`);
    }
  };
  return {
    error: (m, f) => write('error', m, f),
    warn: (m, f) => write('warn', m, f),
    info: (m, f) => write('info', m, f),
  };
}
