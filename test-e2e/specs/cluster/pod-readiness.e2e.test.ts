import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  createTestNamespace,
  kubeClients,
  podReady,
  testboxPod,
  waitForPod,
} from '../../src/framework/index.js';
import type { TestNamespace } from '../../src/framework/index.js';

const PODS = 10;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

describe('pods with an exec readiness probe', () => {
  const { core } = kubeClients();
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'ready' });
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it(`reach Ready; median create-to-Ready of ${PODS} pods is reported`, async () => {
    const timings: number[] = [];
    // One after another, so each figure is one pod's latency, not a burst's queueing.
    for (let i = 0; i < PODS; i++) {
      const name = `ready-${i}`;
      const pod = testboxPod(name, ['sleep', '3600'], (p) => {
        p.spec!.containers[0]!.readinessProbe = { exec: { command: ['true'] }, periodSeconds: 1 };
      });
      const started = Date.now();
      await core.createNamespacedPod({ namespace: ns.name, body: pod });
      await waitForPod(core, { namespace: ns.name, name }, podReady, 60_000);
      timings.push(Date.now() - started);
    }
    const summary = {
      pods: PODS,
      medianMs: median(timings),
      minMs: Math.min(...timings),
      maxMs: Math.max(...timings),
      allMs: timings,
    };
    console.log(`create-to-Ready: ${JSON.stringify(summary)}`);
    expect(timings).toHaveLength(PODS);
  });
});
