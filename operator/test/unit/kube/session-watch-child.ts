/**
 * Child process of dot-i-source.test.ts: runs the SandboxSession source (dot-i's Operator with the
 * recovering watch) against $KUBECONFIG, as the operator does, and prints one JSON line per event
 * and per log line. The test watches this process from outside, so nothing in it is stubbed.
 */
import { startSessionWatch } from '../../../src/kube/dot-i-source.js';
import type { LogFields, Logger } from '../../../src/telemetry/log-port.js';

const print = (line: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`);
};
const log =
  (level: string) =>
  (message: string, fields?: LogFields): void =>
    print({ level, message, ...fields });
const logger: Logger = { error: log('error'), warn: log('warn'), info: log('info'), debug: log('debug') };

await startSessionWatch({
  namespaces: (process.env.WATCH_NAMESPACES ?? '').split(',').filter(Boolean),
  logger,
  backoff: { baseMs: 5, maxMs: 40, jitter: 0.2 },
  onEvent: (event) => print({ event: event.type, key: event.key }),
});
print({ started: true });
