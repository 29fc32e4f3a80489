/**
 * Composition root of the egress drop reporter, the node DaemonSet of
 * templates/egress-drop-reporter.yaml (docs/egress.md, "Direct connections in the audit"): reads
 * its configuration, runs the NFLOG helper through the reader, and sends every dropped packet to
 * the egress proxy's audit service, which records it in the session of the sandbox Pod that sent
 * it. Runs in the host network namespace (where kube-router logs drops) with CAP_NET_ADMIN only.
 * Exits 1 when the helper cannot bind (so the Pod restarts visibly); flushes on SIGTERM.
 */
import { readFileSync } from 'node:fs';

import { createLogger } from '../logger.js';
import { loadDropReporterConfig } from './config.js';
import { DropReader, type ReaderLog } from './reader.js';
import { DropReporter, httpDropSender } from './reporter.js';

const config = loadDropReporterConfig(process.env);
const base = createLogger(config.logLevel);
// The proxy's log shape; `component` tells the reporter's lines from the proxy's.
const log: ReaderLog = {
  error: (msg, f) => base.error(msg, { component: 'drop-reporter', ...f }),
  warn: (msg, f) => base.warn(msg, { component: 'drop-reporter', ...f }),
  info: (msg, f) => base.info(msg, { component: 'drop-reporter', ...f }),
};

const token = readFileSync(config.tokenFile, 'utf8').trim();
if (!/^[0-9a-f]{64}$/.test(token)) throw new Error(`DROPS_TOKEN_FILE ${config.tokenFile} holds no token`);
const reporter = new DropReporter({
  send: httpDropSender({ auditUrl: config.auditUrl, token }),
  log,
  batchMs: config.batchMs,
  batchMax: config.batchMax,
  queueMax: config.queueMax,
});
const reader = new DropReader({
  command: config.helper,
  args: [String(config.nflogGroup)],
  onDrop: (d) => reporter.push(d),
  onFatal: (reason) => {
    log.error('cannot read dropped packets; exiting', { reason });
    clearInterval(stats);
    void reporter.flush().finally(() => process.exit(1));
  },
  log,
});

let last = '';
const stats = setInterval(() => {
  const now = JSON.stringify({ ...reader.stats, ...reporter.stats });
  if (now !== last)
    log.info('drop counters', { ...reader.stats, ...reporter.stats, pending: reporter.pending });
  last = now;
}, config.statsSeconds * 1000);

reader.start();
log.info('egress drop reporter started', { nflogGroup: config.nflogGroup, auditUrl: config.auditUrl });

process.once('SIGTERM', () => {
  clearInterval(stats);
  reporter.stop();
  void reader
    .stop()
    .then(() => reporter.flush())
    .then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('shutdown failed', { err: String(err) });
        process.exit(1);
      },
    );
});
