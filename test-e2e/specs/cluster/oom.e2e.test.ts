import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  containerTerminated,
  createTestNamespace,
  kubeClients,
  podPhase,
  testboxPod,
  waitForPod,
} from '../../src/framework/index.js';
import type { TestNamespace } from '../../src/framework/index.js';

describe('memory limits', () => {
  const { core } = kubeClients();
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'oom' });
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it('OOM-kills a container over its limit and reports OOMKilled', async () => {
    // `tail /dev/zero` buffers an endless line: its memory grows until the cgroup limit kills it.
    const hog = testboxPod('hog', ['tail', '/dev/zero'], (p) => {
      p.spec!.containers[0]!.resources = { limits: { memory: '32Mi' }, requests: { memory: '32Mi' } };
    });
    await core.createNamespacedPod({ namespace: ns.name, body: hog });
    const ref = { namespace: ns.name, name: 'hog' };
    const killed = await waitForPod(core, ref, containerTerminated('OOMKilled'), 90_000);
    // SIGKILL from the kernel's memory cgroup OOM killer.
    expect(killed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(137);
    // restartPolicy Never: the pod ends Failed (the phase can follow the container status by a sync).
    await waitForPod(core, ref, podPhase('Failed'), 30_000);
  });
});
