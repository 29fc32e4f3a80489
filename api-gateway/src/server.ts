/**
 * The composition root: the only module that reads the environment, loads files, creates
 * Kubernetes clients and listens. Config is validated at boot (fail fast). On SIGTERM/SIGINT the
 * server stops accepting, lets in-flight requests finish (bounded by the shutdown grace), flushes
 * pending activity patches, stops the informers, and exits.
 */
import { readFile } from 'node:fs/promises';

import * as k8s from '@kubernetes/client-node';
import { readMasterKeyFile } from '@sandbox-platform/api';

import { ThrottledActivityReporter } from './activity/reporter.js';
import { buildApp } from './app.js';
import { ApiKeys } from './auth/keys.js';
import { loadConfig, type GatewayConfig } from './config.js';
import { AgentTransport } from './exec/agent-transport.js';
import { KubernetesExecTransport } from './exec/kube-exec-transport.js';
import { createPodExecutor } from './exec/pod-executor.js';
import { WinstonFastifyLogger, createWinston, serializeError } from './logger.js';
import { createMetrics } from './metrics.js';
import { KubeSessionStore } from './sessions/kube-store.js';
import { sessionState } from './sessions/model.js';

/** Deadline of a file transfer to a sandbox (no command timeout applies). */
const FILE_TIMEOUT_MS = 120_000;

/** A KubeConfig from the usual places (in-cluster service account, or $KUBECONFIG). */
function loadKubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault();
  return kc;
}

async function main(): Promise<void> {
  const config: GatewayConfig = loadConfig(process.env);
  const logger = new WinstonFastifyLogger(createWinston(config.logLevel));
  const keys = ApiKeys.parse(await readFile(config.apiKeysFile, 'utf8'), config.namespaces);
  // The one shared reader: the operator derives the same tokens from the same bytes.
  const masterKey = readMasterKeyFile(config.masterKeyFile);
  const metrics = createMetrics(true);

  // Two KubeConfigs on purpose: REST and watches on one, pods/exec WebSockets on the other.
  const store = new KubeSessionStore({
    kubeConfig: loadKubeConfig(),
    namespaces: config.namespaces,
    log: logger,
  });
  const agent = new AgentTransport({
    masterKey,
    port: config.agentPort,
    connectTimeoutMs: config.exec.connectTimeoutMs,
    connectRetries: config.exec.connectRetries,
    deadlineMarginMs: config.exec.deadlineMarginMs,
    maxResponseBytes: config.exec.maxOutputBytes * 4 + 64 * 1024,
    fileTimeoutMs: FILE_TIMEOUT_MS,
    lookup: (t) => {
      const s = store.get(t.namespace, t.name);
      const state = s && sessionState(s);
      return state?.kind === 'ready' && state.target.uid === t.uid ? state.target.podIP : undefined;
    },
  });
  const kubeExec = new KubernetesExecTransport({
    executor: createPodExecutor(loadKubeConfig()),
    maxOutputBytes: config.exec.maxOutputBytes,
    deadlineMarginMs: config.exec.deadlineMarginMs,
    fileTimeoutMs: FILE_TIMEOUT_MS,
  });
  const activity = new ThrottledActivityReporter({
    patcher: store,
    throttleMs: config.activityThrottleMs,
    log: logger,
    onPatch: (outcome) => metrics.activityPatches.inc({ outcome }),
  });

  const app = await buildApp({
    config,
    logger,
    keys,
    store,
    transports: { Agent: agent, KubernetesExec: kubeExec },
    activity,
    metrics,
  });
  await store.start();
  await app.listen({ port: config.port, host: config.host });
  logger.info(
    { namespaces: config.namespaces, keys: keys.size, synced: store.synced() },
    'api-gateway listening',
  );

  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      logger.error({ graceMs: config.shutdownGraceMs }, 'shutdown grace exceeded; exiting');
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    app.close().then(
      () => {
        logger.info({}, 'shut down');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  // The logger may not exist yet (bad config): write one JSON line to stderr and exit non-zero.
  const error = err instanceof Error ? serializeError(err) : { message: String(err) };
  process.stderr.write(
    JSON.stringify({ level: 'error', message: 'api-gateway failed to start', err: error }) + '\n',
  );
  process.exit(1);
});
