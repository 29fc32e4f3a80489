/**
 * A live gateway for the SDK and CLI tests without a cluster: a control-plane-only localkube (a
 * real kube-apiserver on free ports), the real gateway with its production wiring, and real
 * sandbox agents as local processes, reusing the gateway's integration environment
 * (test-support/gateway/gateway-env.ts). No kubelet and no operator run, so this process
 * plays the operator: every new session gets an agent on its own loopback address and a Ready
 * status pointing at it, as the operator would write.
 *
 * Writes the same variables as `make platform-env` (E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY,
 * E2E_OTHER_API_KEY, E2E_NAMESPACE, E2E_OTHER_NAMESPACE) to --write-env, prints `READY <file>`,
 * and runs until SIGTERM or SIGINT, then stops everything. Started by sdk/scripts/with-local-gateway.sh.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import * as k8s from '@kubernetes/client-node';

import { CONDITIONS } from '@sandbox-platform/api';
import { GatewayEnv, KEYS } from '@sandbox-platform/test-support/gateway';
import { applyCrds, startControlPlane } from '@sandbox-platform/test-support';

/** How often the stand-in operator looks for new sessions. */
const POLL_MS = 200;

// The bundle runs from api-gateway/node_modules/.cache: the repository root and the localkube
// binary are passed in rather than derived from the bundle's place.
const { values } = parseArgs({ options: { 'write-env': { type: 'string' }, root: { type: 'string' } } });
const envFile = values['write-env'];
const root = values.root;
if (!envFile || !root) throw new Error('local-gateway: --write-env and --root are required');
if (!process.env.LOCALKUBE_BIN) throw new Error('local-gateway: LOCALKUBE_BIN is required');
const crdDir = join(root, 'crds');

const log = (msg: string): void => void process.stderr.write(`[local-gateway] ${msg}\n`);

const started = Date.now();
const cp = await startControlPlane({ crdDir });
process.env.KUBECONFIG = cp.kubeconfig;
const kc = new k8s.KubeConfig();
kc.loadFromFile(cp.kubeconfig);
await applyCrds(kc, crdDir);
log(`control plane ready in ${Date.now() - started} ms (${cp.dir})`);

const env = new GatewayEnv();
await env.setup();
const gw = await env.startGateway({ GATEWAY_DEFAULT_WAIT_SECONDS: '20' });
log(`gateway on ${gw.url}, namespaces ${env.nsA.name} and ${env.nsB.name}`);

/** Sessions already handed an agent, by uid (a re-created name has a new uid and gets a new agent). */
const served = new Set<string>();
let stopping = false;

async function serveNewSessions(): Promise<void> {
  for (const ns of [env.nsA.name, env.nsB.name]) {
    for (const s of await env.list(ns)) {
      const uid = s.metadata.uid ?? '';
      const ready = s.status?.conditions?.some((c) => c.type === CONDITIONS.ready && c.status === 'True');
      if (ready || served.has(uid) || s.metadata.deletionTimestamp) continue;
      served.add(uid);
      const { podIP } = await env.makeReady(ns, s.metadata.name ?? '');
      log(`session ${ns}/${s.metadata.name} ready at ${podIP}`);
    }
  }
}

async function operatorLoop(): Promise<void> {
  while (!stopping) {
    try {
      await serveNewSessions();
    } catch (err) {
      // A session deleted between list and patch: the next round sees the current state.
      log(`stand-in operator: ${(err as Error).message}`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

const loop = operatorLoop();
writeFileSync(
  envFile,
  [
    `E2E_GATEWAY_URL=${gw.url}`,
    `E2E_GATEWAY_API_KEY=${KEYS.a}`,
    `E2E_OTHER_API_KEY=${KEYS.b}`,
    `E2E_NAMESPACE=${env.nsA.name}`,
    `E2E_OTHER_NAMESPACE=${env.nsB.name}`,
    '',
  ].join('\n'),
  { mode: 0o600 },
);
process.stdout.write(`READY ${envFile}\n`);

async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping`);
  await loop;
  await env.teardown();
  await cp.stop();
  log('stopped');
  process.exit(0);
}
process.once('SIGTERM', () => void stop('SIGTERM'));
process.once('SIGINT', () => void stop('SIGINT'));
