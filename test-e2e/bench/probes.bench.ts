/**
 * What a sandbox Pod's probes cost the node (make bench-probes): the node's CPU (every process on
 * it, from /proc/stat) while N idle agent Pods run with
 *   - exec probes, as the sandbox Pods had them: `sandbox-agent probe` every 2 s (readiness) and
 *     `sandbox-agent probe --live` every 10 s (liveness), a Node process in the container each time;
 *   - HTTP probes, as the operator now builds them: the kubelet's GET /healthz every 2 s and
 *     GET /livez every 10 s on the agent port;
 *   - no Pods at all (the baseline: the control plane, operator and gateway idling),
 * in interleaved rounds (none, exec, http, ...), per runtime (runc, and gVisor where RuntimeClass
 * gvisor exists). Each phase creates its N Pods, waits until all are Ready, lets them settle, then
 * samples /proc/stat over the window. Prints cores used per phase (median over rounds), the Pods'
 * share above the baseline, and the ratio HTTP / exec of that share.
 *
 * Needs a cluster with the agent image (`make platform-up`, or any cluster via KUBECONFIG: then the
 * figures are the node's only when the bench runs on it).
 *   --pods N            Pods per phase (default 4: 8 gVisor Pods with exec probes took the whole
 *                       2-core node, load 45, and never all became Ready in a fresh-clone make bench)
 *   --window-seconds S  CPU sampling window per phase (default 20)
 *   --rounds N          interleaved rounds (default 2)
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';

import type * as k8s from '@kubernetes/client-node';
import { AGENT_PATHS, AGENT_PORT } from '@sandbox-platform/api';

import { createTestNamespace, isNotFound, kubeClients, predicate, waitFor } from '../src/framework/index.js';
import { GVISOR, hasRuntimeClass } from '../specs/isolation/support.js';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '4' },
    'window-seconds': { type: 'string', default: '20' },
    rounds: { type: 'string', default: '2' },
  },
});
const PODS = Number(values.pods);
const WINDOW_MS = Number(values['window-seconds']) * 1000;
const ROUNDS = Number(values.rounds);
const SETTLE_MS = 5000;
const IMAGE = process.env.E2E_AGENT_IMAGE ?? 'localhost/sandbox-platform/sandbox-agent:dev';

type Mode = 'none' | 'exec' | 'http';
const kube = kubeClients();

const PROBES: Record<Exclude<Mode, 'none'>, Pick<k8s.V1Container, 'readinessProbe' | 'livenessProbe'>> = {
  exec: {
    readinessProbe: { exec: { command: ['sandbox-agent', 'probe'] }, periodSeconds: 2, timeoutSeconds: 2 },
    livenessProbe: {
      exec: { command: ['sandbox-agent', 'probe', '--live'] },
      initialDelaySeconds: 10,
      periodSeconds: 10,
      timeoutSeconds: 5,
    },
  },
  http: {
    readinessProbe: {
      httpGet: { path: AGENT_PATHS.healthz, port: AGENT_PORT },
      periodSeconds: 2,
      timeoutSeconds: 2,
    },
    livenessProbe: {
      httpGet: { path: AGENT_PATHS.livez, port: AGENT_PORT },
      initialDelaySeconds: 10,
      periodSeconds: 10,
      timeoutSeconds: 5,
    },
  },
};

/** An idle agent Pod as the operator builds one (restricted security context, workspace, token). */
function agentPod(name: string, mode: Exclude<Mode, 'none'>, runtimeClassName?: string): k8s.V1Pod {
  return {
    metadata: { name, labels: { app: 'bench-probes' } },
    spec: {
      ...(runtimeClassName ? { runtimeClassName } : {}),
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 1,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        fsGroup: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'sandbox',
          image: IMAGE,
          imagePullPolicy: 'Never',
          env: [{ name: 'SANDBOX_TOKEN', value: 'bench-probes-token-0123456789abcdef' }],
          ports: [{ name: 'agent', containerPort: AGENT_PORT }],
          ...PROBES[mode],
          resources: { requests: { cpu: '10m', memory: '64Mi' }, limits: { memory: '256Mi' } },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [
            { name: 'workspace', mountPath: '/workspace' },
            { name: 'tmp', mountPath: '/tmp' },
          ],
        },
      ],
      volumes: [
        { name: 'workspace', emptyDir: {} },
        { name: 'tmp', emptyDir: {} },
      ],
    },
  };
}

/** Busy and total jiffies of the node so far (/proc/stat's first line). */
function cpuTimes(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8')
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = fields[3]! + fields[4]!; // idle + iowait
  return { busy: total - idle, total };
}

/** Cores in use on average over `ms` (busy share of all CPUs times their count). */
async function coresUsed(ms: number): Promise<number> {
  const cpus = readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .filter((l) => /^cpu\d+ /.test(l)).length;
  const a = cpuTimes();
  await new Promise((r) => setTimeout(r, ms));
  const b = cpuTimes();
  return ((b.busy - a.busy) / (b.total - a.total)) * cpus;
}

async function phase(
  namespace: string,
  mode: Mode,
  runtimeClassName: string | undefined,
  round: number,
): Promise<number> {
  const names = mode === 'none' ? [] : Array.from({ length: PODS }, (_, i) => `${mode}-${round}-${i}`);
  await Promise.all(
    names.map((name) =>
      kube.core.createNamespacedPod({
        namespace,
        body: agentPod(name, mode as Exclude<Mode, 'none'>, runtimeClassName),
      }),
    ),
  );
  // Each Pod Ready once, not all at the same instant: exec probes of 8 Pods use most of a 2-core
  // node, their 2 s timeouts then expire now and then, and Pods flap between Ready and not (a
  // fresh-clone `make bench` of 2026-12-06 waited 300 s in vain for all 8 at once, twice).
  const seenReady = new Set<string>();
  await waitFor(
    () => kube.core.listNamespacedPod({ namespace, labelSelector: 'app=bench-probes' }),
    predicate(`${names.length} ${mode} Pods each Ready once`, (l: k8s.V1PodList) => {
      for (const p of l.items) {
        if (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
          seenReady.add(p.metadata!.name!);
      }
      return seenReady.size === names.length;
    }),
    { timeoutMs: 300_000, intervalMs: 1000 },
  );
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const cores = await coresUsed(WINDOW_MS);
  await kube.core.deleteCollectionNamespacedPod({
    namespace,
    labelSelector: 'app=bench-probes',
    gracePeriodSeconds: 0,
  });
  await waitFor(
    () => kube.core.listNamespacedPod({ namespace, labelSelector: 'app=bench-probes' }),
    predicate('no bench Pod left', (l: k8s.V1PodList) => l.items.length === 0),
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  console.log(`  round ${round} ${mode.padEnd(4)} ${names.length} Pods: ${cores.toFixed(3)} cores`);
  return cores;
}

/** Every mode in each round, interleaved (none, exec, http, none, ...): cores used per mode. */
async function rounds(
  namespace: string,
  runtimeClassName: string | undefined,
): Promise<Record<Mode, number[]>> {
  const cores: Record<Mode, number[]> = { none: [], exec: [], http: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of ['none', 'exec', 'http'] as const) {
      cores[mode].push(await phase(namespace, mode, runtimeClassName, round));
    }
  }
  return cores;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main(): Promise<void> {
  const runtimes: Array<{ label: string; runtimeClassName?: string }> = [{ label: 'runc' }];
  if (await hasRuntimeClass(kube.kc, GVISOR)) runtimes.push({ label: 'gVisor', runtimeClassName: GVISOR });
  const ns = await createTestNamespace(kube.core, { prefix: 'bench-probes' });
  console.log(
    `[probes bench] ${PODS} idle agent Pods per phase, ${WINDOW_MS / 1000} s window, ${ROUNDS} rounds; load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  try {
    for (const { label, runtimeClassName } of runtimes) {
      console.log(`\n== ${label}`);
      const cores = await rounds(ns.name, runtimeClassName);
      const base = median(cores.none);
      const exec = median(cores.exec) - base;
      const http = median(cores.http) - base;
      console.log(
        `  ${label}: baseline ${base.toFixed(3)} cores; ${PODS} Pods above it: exec probes ${exec.toFixed(3)} cores (${((exec / PODS) * 1000).toFixed(1)} millicores per Pod), HTTP probes ${http.toFixed(3)} cores (${((http / PODS) * 1000).toFixed(1)} millicores per Pod)`,
      );
      console.log(
        `  ${label}: HTTP / exec probes (node CPU above the baseline): ${(http / exec).toFixed(2)}x`,
      );
    }
  } finally {
    await ns.cleanup({ wait: true, timeoutMs: 120_000 }).catch((err: unknown) => {
      if (!isNotFound(err)) console.error(`cleanup of ${ns.name} failed:`, err);
    });
    console.log(
      `[probes bench] done; load ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
  }
}

await main();
