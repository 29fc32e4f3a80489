/**
 * The real dependencies of the gateway, built from validated config and loaded secrets. server.ts
 * uses it with clients from the environment; integration tests use it with a test cluster, so
 * they exercise exactly the production wiring.
 */
import type * as k8s from '@kubernetes/client-node';
import type { FastifyBaseLogger } from 'fastify';

import { ThrottledActivityReporter } from './activity/reporter.js';
import type { AppDeps } from './app.js';
import type { KeyAuthenticator } from './auth/keys.js';
import type { GatewayConfig } from './config.js';
import { loadConsoleAssets } from './console/index.js';
import { createE2bDeps } from './e2b/index.js';
import { AgentInteractive } from './exec/agent/agent-interactive.js';
import { AgentTransport } from './exec/agent/agent-transport.js';
import { KubernetesExecTransport } from './exec/kube/kube-exec-transport.js';
import { createPodExecutor } from './exec/kube/pod-executor.js';
import { ByteBudget } from './limits/byte-budget.js';
import { createMetrics, type GatewayMetrics } from './metrics.js';
import { createPreviewDeps } from './preview/index.js';
import { AuditClient } from './audit/client.js';
import { KubeEgressWriter } from './audit/egress-writer.js';
import { KubeSessionStore } from './sessions/kube-store.js';
import { KubeSnapshotApi } from './snapshots/kube-snapshots.js';
import { dialLookup } from './sessions/pod-identity.js';
import type { AgentCallTracing, KubeApiTracing } from './tracing/tracing-config.js';

/** Deadline of a file transfer to a sandbox (no command timeout applies). */
export const FILE_TIMEOUT_MS = 120_000;

/**
 * Sandbox Pods cached per namespace for the Pod identity check (a projection of a few hundred
 * bytes each: a few MiB at most). The namespace's ResourceQuota bounds its Pods far below this;
 * past it, Pods are not cached and their sessions stay unverified (503), never dialed.
 */
export const MAX_PODS_PER_NAMESPACE = 10_000;

/** What composeDeps needs. */
export interface ComposeInputs {
  config: GatewayConfig;
  logger: FastifyBaseLogger;
  keys: KeyAuthenticator;
  masterKey: Buffer;
  /** REST calls and watches. */
  kubeConfig: k8s.KubeConfig;
  /** pods/exec only: a separate KubeConfig object that no REST client shares. */
  streamingKubeConfig: k8s.KubeConfig;
  metrics?: GatewayMetrics;
  /** Tracing on: spans of the Kubernetes and agent calls (server.ts loads it only then). */
  tracing?: { kube: KubeApiTracing; agent: AgentCallTracing };
}

/** The app dependencies plus the store, which the caller starts (and the app closes). */
export interface ComposedDeps extends AppDeps {
  store: KubeSessionStore;
  metrics: GatewayMetrics;
}

/** Builds the store, both transports and the activity reporter. */
export function composeDeps(inputs: ComposeInputs): ComposedDeps {
  const { config, logger } = inputs;
  if (inputs.kubeConfig === inputs.streamingKubeConfig) {
    throw new Error('composeDeps: pods/exec needs its own KubeConfig object, not the REST one');
  }
  const metrics = inputs.metrics ?? createMetrics();
  // One budget for the agent answers being read and the responses waiting for their clients.
  const budget = new ByteBudget(config.server.maxBufferedAnswerBytes);
  const store = new KubeSessionStore({
    kubeConfig: inputs.kubeConfig,
    apiTimeoutMs: config.kubeApiTimeoutMs,
    namespaces: config.namespaces,
    log: logger,
    ...(config.podIdentityCheck ? { pods: { maxPerNamespace: MAX_PODS_PER_NAMESPACE } } : {}),
    ...(inputs.tracing ? { tracing: inputs.tracing.kube } : {}),
  });
  const dialPolicy = { address: config.addressPolicy, podIdentityCheck: config.podIdentityCheck };
  const agent = new AgentTransport({
    masterKey: inputs.masterKey,
    port: config.agentPort,
    connectTimeoutMs: config.exec.connectTimeoutMs,
    connectRetries: config.exec.connectRetries,
    deadlineMarginMs: config.exec.deadlineMarginMs,
    // The agent caps each stream; answers are bounded by that cap (answerLimit).
    maxOutputBytes: config.exec.maxOutputBytes,
    fileTimeoutMs: FILE_TIMEOUT_MS,
    ...(inputs.tracing ? { tracing: inputs.tracing.agent } : {}),
    lookup: dialLookup(store, dialPolicy),
  });
  const executor = createPodExecutor(inputs.streamingKubeConfig);
  const kubeExec = new KubernetesExecTransport({
    executor,
    ...(inputs.tracing ? { traced: inputs.tracing.kube.traceApi(executor, 'pods/exec') } : {}),
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
  return {
    config,
    logger,
    keys: inputs.keys,
    store,
    transports: { Agent: agent, KubernetesExec: kubeExec },
    interactive: new AgentInteractive(agent),
    activity,
    metrics,
    budget,
    snapshots: new KubeSnapshotApi(inputs.kubeConfig, config.kubeApiTimeoutMs),
    // The console's files are read once here: a missing file stops the gateway at start.
    ...(config.console ? { console: loadConsoleAssets(config.console.dir) } : {}),
    previews: createPreviewDeps(config.preview, inputs.masterKey),
    audit: {
      egressRules: new KubeEgressWriter(inputs.kubeConfig),
      ...(config.audit
        ? { audit: new AuditClient({ url: config.audit.url, masterKey: inputs.masterKey, log: logger }) }
        : {}),
    },
    ...(config.e2b.enabled
      ? {
          e2b: createE2bDeps({
            masterKey: inputs.masterKey,
            keys: inputs.keys,
            kubeConfig: inputs.kubeConfig,
            kubeApiTimeoutMs: config.kubeApiTimeoutMs,
            persistentWorkspace: config.e2b.persistentWorkspace,
          }),
        }
      : {}),
  };
}
