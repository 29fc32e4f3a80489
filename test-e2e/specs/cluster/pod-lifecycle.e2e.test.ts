import { readdirSync, readFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  createTestNamespace,
  kubeClients,
  podReady,
  predicate,
  testboxPod,
  waitFor,
  waitForPod,
  waitForPodGone,
} from '../../src/framework/index.js';
import type { TestNamespace } from '../../src/framework/index.js';
import { itOnLocal } from '../../src/framework/not-run.js';

/** The node's processes are visible only when the tests run on it (the local cluster). */

/** PIDs of host processes whose command line is exactly `argv`. */
function pidsRunning(argv: string[]): number[] {
  const wanted = argv.join('\0');
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0$/, '') === wanted;
      } catch {
        return false; // the process exited while we looked
      }
    })
    .map(Number);
}

describe('pod and owner deletion on the node', () => {
  const { core, apps } = kubeClients();
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'life' });
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  itOnLocal('deleting a pod stops its container process', async () => {
    // A sleep with a duration no other process uses identifies the container's process on the host.
    const argv = ['sleep', `${900_000 + Math.floor(Math.random() * 99_999)}`];
    await core.createNamespacedPod({ namespace: ns.name, body: testboxPod('doomed', argv) });
    await waitForPod(core, { namespace: ns.name, name: 'doomed' }, podReady);
    expect(pidsRunning(argv)).toHaveLength(1);
    await core.deleteNamespacedPod({ namespace: ns.name, name: 'doomed' });
    await waitForPodGone(core, ns.name, 'doomed');
    await waitFor(
      () => Promise.resolve(pidsRunning(argv)),
      predicate(`no host process "${argv.join(' ')}"`, (pids: number[]) => pids.length === 0),
      { timeoutMs: 30_000 },
    );
  });

  it('deleting a Deployment garbage-collects its ReplicaSet and pods', async () => {
    const template = testboxPod('web', ['sleep', '3600']);
    await apps.createNamespacedDeployment({
      namespace: ns.name,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { ...template.spec!, restartPolicy: 'Always' },
          },
        },
      },
    });
    const listPods = async (): Promise<string[]> =>
      (await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'app=web' })).items.map(
        (p) => p.metadata?.name ?? '',
      );
    await waitFor(
      listPods,
      predicate('2 pods of Deployment web', (names: string[]) => names.length === 2),
    );
    await apps.deleteNamespacedDeployment({ namespace: ns.name, name: 'web' });
    await waitFor(
      listPods,
      predicate('no pods of Deployment web', (names: string[]) => names.length === 0),
      {
        timeoutMs: 60_000,
      },
    );
    const replicaSets = await apps.listNamespacedReplicaSet({ namespace: ns.name });
    expect(replicaSets.items).toHaveLength(0);
  });
});
