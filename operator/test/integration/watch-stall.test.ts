/**
 * A session watch that stops delivering without an error (state/watch-lag.ts). The operator talks
 * to the API server through a relay that, once stalled, forwards nothing on the connections it
 * holds while keeping them open (a proxy that stopped forwarding: TCP keep-alive cannot see it).
 * With RESYNC_SECONDS=10 the operator first runs two resync periods with a healthy watch without
 * complaint; after the stall, a session created meanwhile is listed by the resync but never
 * delivered by the watch, so the operator logs the stale watch and exits 1.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';
import type { OperatorProcess } from './harness/operator-process.js';
import { writeKubeconfig } from './harness/service-account.js';
import { readSecret } from './harness/sessions.js';
import { startStallingRelay, type StallingRelay } from './harness/stalling-relay.js';

const STALE = 'the session watch stopped delivering changes; restarting to watch again';
const fx = new OperatorFixture('op-stall');
let relay: StallingRelay;
let op: OperatorProcess;

/** The admin kubeconfig with the server replaced by the relay (the certificate names 127.0.0.1). */
function relayKubeconfig(kc: k8s.KubeConfig, port: number): string {
  const config = JSON.parse(kc.exportConfig()) as { clusters: Array<{ cluster: { server: string } }> };
  for (const c of config.clusters) {
    const url = new URL(c.cluster.server);
    url.host = `127.0.0.1:${port}`;
    c.cluster.server = url.toString().replace(/\/$/, '');
  }
  return writeKubeconfig(config, 'operator-relay-');
}

beforeAll(async () => {
  await fx.setup();
  const server = new URL(fx.kube.kc.getCurrentCluster()!.server);
  relay = await startStallingRelay({ host: server.hostname, port: Number(server.port || 443) });
  op = await fx.startController({
    env: { KUBECONFIG: relayKubeconfig(fx.kube.kc, relay.port), RESYNC_SECONDS: '10' },
  });
});

afterAll(async () => {
  await fx.teardown();
  await relay.close();
});

it('restarts (exit 1) when the session watch stalls, and not while it delivers', async () => {
  await fx.sessions.create('before');
  await waitFor(
    () => readSecret(fx.kube.core, fx.ns.name, 'sbs-before-token'),
    predicate('the Secret of a session created before the stall', (s) => s !== undefined),
  );
  // Two resync periods with a watch that delivers: no alarm.
  await new Promise((r) => setTimeout(r, 22_000));
  expect(op.messages(STALE)).toEqual([]);

  relay.stall();
  await fx.sessions.create('after');
  const line = await op.waitForLog((l) => l.message === STALE, 60_000);
  expect(line).toMatchObject({ level: 'error', example: `${fx.ns.name}/after`, resyncSeconds: 10 });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((r) => (timer = setTimeout(() => r('still running after 40 s'), 40_000)));
  const code = await Promise.race([op.exited, late]);
  clearTimeout(timer);
  expect(code).toBe(1);
}, 150_000);
