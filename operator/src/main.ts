/**
 * Composition root: the only module that reads the environment, builds clients and starts
 * listeners. Everything else receives its dependencies.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';

import * as k8s from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION, bindSigner, formatLogLine, readMasterKeyFile } from '@sandbox-platform/api';

import { ConfigError, loadConfig, type OperatorConfig } from './config.js';
import { systemClock } from './controller/clock.js';
import { reconcile, type ReconcileResult } from './controller/reconcile.js';
import type { ControllerDeps } from './controller/scope.js';
import { isNameConflict } from './controller/errors.js';
import { parseKey, type SessionKey } from './controller/session-key.js';
import { SessionRegistry } from './controller/session-registry.js';
import { releaseWhenSettled, StatusDeferral } from './controller/status-deferral.js';
import { createChildInformers } from './kube/child-informers.js';
import { isQuotaRefused } from './kube/errors.js';
import {
  createClaimStore,
  createPodStore,
  createSecretStore,
  createStorageClassLookup,
} from './kube/child-stores.js';
import { createKubeClients, type KubeClients } from './kube/clients.js';
import { CreatedOverlay } from './state/created-overlay.js';
import { startSessionWatch } from './kube/dot-i-source.js';
import { waitUntilWatchable } from './kube/watch-preflight.js';
import { QueuedEventRecorder } from './kube/events-recorder.js';
import { LeaderElector } from './kube/leader-election.js';
import { createLeaseStore } from './kube/lease-store.js';
import { Resync } from './kube/resync.js';
import { createRuntimeClassLookup, DefaultRuntimeClass } from './kube/runtime-class.js';
import { SessionCache } from './state/session-cache.js';
import { SessionChangeFilter, type QueuePriority } from './state/session-change-filter.js';
import { createTenantSecretReader } from './kube/tenant-secrets.js';
import { createSessionStore } from './kube/session-store.js';
import type { ClaimView, PodView, SecretView } from './state/views.js';
import { WorkQueue } from './state/work-queue.js';
import { PoolController } from './pool/pool-controller.js';
import { createAgentArchiveClient } from './snapshot/agent-archive.js';
import type { SnapshotStoreConfig } from './snapshot/config.js';
import { S3Client } from './snapshot/s3-client.js';
import { SnapshotController } from './snapshot/snapshot-controller.js';
import { egressDnsServerOf } from './runtime/egress-dns.js';
import { Supervisor } from './runtime/supervisor.js';
import { Workload } from './runtime/workload.js';
import { startHttpServer, stopHttpServer } from './telemetry/http-server.js';
import type { Logger } from './telemetry/log-port.js';
import { createLogger, errorFields } from './telemetry/logger.js';
import { OperatorMetrics } from './telemetry/metrics.js';
import type { Tracing } from './telemetry/tracing.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  // Loaded only when on: with tracing off the SDK is not even imported (telemetry/tracing.ts).
  const tracing = config.tracing
    ? (await import('./telemetry/tracing.js')).startTracing(config.tracing, { identity: config.identity })
    : undefined;
  const logger = createLogger(
    config.logLevel,
    { identity: config.identity },
    { context: tracing && (() => tracing.logFields()) },
  );
  const masterKey = readMasterKeyFile(config.masterKeyFile);
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients(kc, {
    timeoutMs: config.apiTimeoutMs,
    maxSockets: config.concurrency * 2 + 8,
  });
  const registry = new SessionRegistry();
  const metrics = new OperatorMetrics(registry);
  // The default RuntimeClass applies only where it exists (kube/runtime-class.ts); every Pod build
  // reads the current verdict through podOptions. A change makes warm Pods of templates naming no
  // runtime outdated: every pool is queued (the pool controller is built below).
  const built: { pools?: PoolController } = {};
  const defaultRuntime = new DefaultRuntimeClass({
    name: config.pod.defaultRuntimeClassName,
    lookup: createRuntimeClassLookup(clients.node),
    logger,
    onChange: (available) => {
      metrics.defaultRuntimeClassAvailable.set(available ? 1 : 0);
      built.pools?.requeueAll();
    },
  });
  const egressDnsServer = await egressDnsServerOf(config, (attempt, err) =>
    logger.warn('egress proxy not resolvable yet (sandbox DNS)', { attempt, err: String(err) }),
  );
  const podOptions = defaultRuntime.podOptions({ ...config.pod, egressDnsServer });

  // The queue's handler closes over `deps`, built below from stores that need the queue (their
  // informers feed it); the queue is created held, and Workload.start releases it once every
  // informer has listed.
  // Progress-only status writes held in a burst are made once the queue has stayed idle.
  const statusDeferral = new StatusDeferral();
  const queue = createQueue(config, (key) => reconcile(key, deps), {
    metrics,
    logger,
    tracing,
    onIdle: releaseWhenSettled(
      () => queue.depth === 0 && queue.inFlight === 0,
      () => statusDeferral.release().forEach((key) => queue.add(key)),
    ),
  });
  metrics.workQueue.observe(queue);
  const enqueue =
    (source: string, priority: QueuePriority = 'normal') =>
    (key: string) => {
      metrics.watchEvents.inc({ source });
      queue.add(key, priority);
    };
  // What this process just created, until the informers show it (state/created-overlay.ts).
  const created = {
    pods: new CreatedOverlay<PodView>(),
    secrets: new CreatedOverlay<SecretView>(),
    persistentvolumeclaims: new CreatedOverlay<ClaimView>(),
  };
  const informers = createChildInformers(kc, clients.core, config.watchNamespaces, {
    logger,
    enqueue: (resource, key) => enqueue(resource)(key),
    isEcho: (resource, view) => created[resource].isEcho(view.metadata),
  });
  const events = new QueuedEventRecorder(clients.events, {
    instance: config.identity,
    logger,
    // Events trail a burst: they wait (at most 5 s) while sessions are queued or being reconciled.
    held: () => queue.depth > 0 || queue.inFlight > 0,
    outcome: (result) => metrics.events.inc({ result }),
  });
  const cache = new SessionCache();
  // Warm pools (docs/adr/0016): informers start with the others, claims run in the session reconcile.
  const pools = new PoolController({
    kc,
    clients,
    namespaces: config.watchNamespaces,
    podOptions,
    signer: bindSigner(masterKey),
    bind: { port: config.pool.agentPort, timeoutMs: config.pool.bindTimeoutMs },
    backoff: config.backoff,
    registry: metrics.registry,
    logger,
    wakeSession: enqueue('pools'),
  });
  built.pools = pools;
  // Snapshots (docs/snapshots.md): copies and restores through the agents, objects in S3.
  const snapshots = new SnapshotController({
    kc,
    clients,
    namespaces: config.watchNamespaces,
    store: config.snapshots.store && snapshotStore(config.snapshots.store),
    agent: createAgentArchiveClient({
      port: config.pool.agentPort,
      idleTimeoutMs: config.snapshots.agentIdleTimeoutMs,
    }),
    masterKey,
    session: (namespace, name) => deps.sessions.get({ namespace, name }),
    pod: (namespace, name) => deps.pods.cached(namespace, name),
    wakeSession: enqueue('snapshots'),
    events,
    limits: config.snapshots.limits,
    backoff: config.backoff,
    logger,
  });
  const deps: ControllerDeps = {
    // A session watch that stopped delivering (state/watch-lag.ts) is not repaired in place (dot-i
    // cannot re-watch without exiting): stop gracefully, hand the Lease over, and let the restart
    // re-watch, as dot-i itself does on a watch error.
    sessions: createSessionStore(clients, config.watchNamespaces, cache, (keys) => {
      logger.error('the session watch stopped delivering changes; restarting to watch again', {
        sessions: keys.length,
        example: keys[0],
        resyncSeconds: config.resyncMs / 1000,
      });
      void supervisor.shutdown('session watch stale', true);
    }),
    pods: createPodStore(clients, informers.pods, created.pods),
    secrets: createSecretStore(clients, informers.secrets, created.secrets),
    claims: createClaimStore(clients, informers.claims, created.persistentvolumeclaims),
    storageClasses: createStorageClassLookup(clients.storage, storageClassReadFailed(logger)),
    tenantSecrets: createTenantSecretReader(clients.json),
    workspaceBindTimeoutMs: config.workspaceBindTimeoutMs,
    events,
    clock: systemClock,
    masterKey,
    podOptions,
    requeueFloorMs: config.requeueFloorMs,
    waitRequeueMs: config.waitRequeueMs,
    observer: metrics,
    tracePhase: tracing && ((name, run) => tracing.tracePhase(name, run)),
    logger,
    otherWork: () => queue.depth + Math.max(0, queue.inFlight - 1),
    statusDeferral,
    pools: pools.claims,
    restores: snapshots.restores,
  };
  const filter = new SessionChangeFilter();
  const workload = new Workload({
    // Child informers are read-only caches, warm on the standby too; pools and snapshots write.
    caches: informers.all,
    informers: [pools, snapshots],
    queue,
    events,
    resync: new Resync({
      sessions: deps.sessions,
      intervalMs: config.resyncMs,
      enqueue: enqueue('resync', 'low'),
      known: () => registry.keys(),
      logger,
    }),
    startWatch: async () => {
      const scopes = config.watchNamespaces.length > 0 ? config.watchNamespaces : [''];
      await Promise.all(scopes.map((ns) => waitUntilWatchable(kc, sessionsPath(ns), logger)));
      return startSessionWatch({
        namespaces: config.watchNamespaces,
        logger,
        onEvent: (event) => {
          // Every event feeds the cache (status-only ones too: they carry the resourceVersion
          // the next status write needs); only the ones that matter queue a reconcile.
          if (event.type === 'DELETED') cache.forget(event.key);
          else cache.observe(event.object);
          // A replay of a settled session waits behind new sessions and real changes.
          const lane = filter.classify(event.type, event.key, event.object);
          if (lane) enqueue('sessions', lane)(event.key);
        },
      });
    },
    logger,
  });
  const supervisor = new Supervisor({
    workload,
    elector: elector(config, clients, logger),
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    logger,
    onLeader: (leading) => metrics.leader.set(leading ? 1 : 0),
    // After a graceful stop, buffered spans are exported first (the exporter's timeout bounds it).
    // Any other exit is at once: a leader that lost its Lease must stop reconciling now.
    exit: (code) => {
      if (!tracing || code !== 0) process.exit(code);
      void tracing
        .shutdown()
        .catch((err: unknown) => logger.warn('exporting the last spans failed', errorFields(err)))
        .finally(() => process.exit(code));
    },
  });
  const server = await startHttpServer({
    port: config.http.port,
    host: config.http.host,
    isReady: () => supervisor.isReady(),
    logger,
  });
  const metricsServer = await startHttpServer({
    port: config.http.metricsPort,
    host: config.http.host,
    registry: metrics.registry,
    logger,
  });
  const address = server.address();
  const metricsAddress = metricsServer.address();
  logger.info('operator starting', {
    watchNamespaces: config.watchNamespaces.length > 0 ? config.watchNamespaces.join(',') : '(all)',
    concurrency: config.concurrency,
    leaderElection: Boolean(config.leaderElection),
    httpPort: typeof address === 'object' && address ? address.port : config.http.port,
    metricsPort:
      typeof metricsAddress === 'object' && metricsAddress ? metricsAddress.port : config.http.metricsPort,
    tracing: config.tracing ? `${config.tracing.protocol} ${config.tracing.endpoint}` : 'off',
    // The V8 heap limit bounds RSS; see operator/README.md (memory) for the recommended setting.
    heapLimitMb: Math.round(getHeapStatistics().heap_size_limit / 1048576),
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      void Promise.all([stopHttpServer(server), stopHttpServer(metricsServer)])
        .catch((err: unknown) => logger.warn('closing the HTTP server failed', errorFields(err)))
        .then(() => supervisor.shutdown(signal));
    });
  }
  // The first verdict on the default RuntimeClass comes before any Pod is built.
  await defaultRuntime.start();
  await supervisor.run();
}

function createQueue(
  config: OperatorConfig,
  handle: (key: SessionKey) => Promise<ReconcileResult>,
  {
    metrics,
    logger,
    tracing,
    onIdle,
  }: { metrics: OperatorMetrics; logger: Logger; tracing?: Tracing; onIdle: () => void },
): WorkQueue {
  const run = (key: string): Promise<ReconcileResult> => handle(parseKey(key));
  return new WorkQueue({
    held: true,
    onIdle,
    concurrency: config.concurrency,
    backoff: config.backoff,
    handler: tracing ? (key) => tracing.traceReconcile(key, () => run(key)) : run,
    hooks: metrics.workQueue.hooks({
      onError: (key, err, attempt, delayMs) => {
        const { namespace, name } = parseKey(key);
        const fields = {
          namespace,
          session: name,
          attempt,
          retryInMs: delayMs,
          ...errorFields(err),
          ...tracing?.errorFields(err),
        };
        if (isNameConflict(err)) logger.warn('name conflict; retrying', fields);
        else if (isQuotaRefused(err)) logger.warn('refused by a ResourceQuota; retrying', fields);
        else logger.error('reconcile failed; retrying', fields);
      },
      onDone: (_key, ms, ok) => metrics.reconcileDuration.observe({ result: ok ? 'ok' : 'error' }, ms / 1000),
    }),
  });
}

/**
 * Logs a failed StorageClass read once per kind of failure (a missing `get storageclasses`
 * permission would otherwise log on every reconcile of every unbound workspace).
 */
function storageClassReadFailed(logger: Logger): (err: unknown) => void {
  const seen = new Set<string>();
  return (err) => {
    const fields = errorFields(err);
    const kind = JSON.stringify(fields);
    if (seen.has(kind)) return;
    seen.add(kind);
    logger.warn(
      'cannot read StorageClasses; unbound workspaces are judged by their bind timeout only',
      fields,
    );
  };
}

/**
 * The snapshot store's client; the credentials are the files of the Secret mounted into the
 * operator only (chart: snapshots.s3.credentialsSecret).
 */
function snapshotStore(store: SnapshotStoreConfig): S3Client {
  const read = (file: string): string => readFileSync(join(store.credentialsDir, file), 'utf8').trim();
  return new S3Client({
    endpoint: store.endpoint,
    bucket: store.bucket,
    region: store.region,
    credentials: { accessKeyId: read('access-key-id'), secretAccessKey: read('secret-access-key') },
    timeoutMs: store.timeoutMs,
  });
}

/** The watch path of SandboxSessions in a namespace, '' = all (what dot-i watches). */
function sessionsPath(namespace: string): string {
  return `/apis/${GROUP}/${VERSION}/${namespace ? `namespaces/${namespace}/` : ''}${PLURAL}`;
}

function elector(config: OperatorConfig, clients: KubeClients, logger: Logger): LeaderElector | undefined {
  const le = config.leaderElection;
  if (!le) return undefined;
  return new LeaderElector({
    store: createLeaseStore(clients.coordination, le.leaseNamespace, le.leaseName),
    identity: config.identity,
    leaseDurationMs: le.leaseDurationMs,
    renewDeadlineMs: le.renewDeadlineMs,
    retryPeriodMs: le.retryPeriodMs,
    logger,
  });
}

main().catch((err: unknown) => {
  // Before the logger exists (bad config) there is nothing but stderr; the message names the
  // problem, never a secret value.
  const code = err instanceof ConfigError ? 2 : 1;
  process.stderr.write(
    `${formatLogLine({ service: 'sandbox-operator', level: 'error', msg: 'operator failed to start' }, errorFields(err))}\n`,
  );
  process.exit(code);
});
