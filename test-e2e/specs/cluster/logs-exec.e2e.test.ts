import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  createTestNamespace,
  kubeClients,
  kubectl,
  podReady,
  testboxPod,
  waitForPod,
} from '../../src/framework/index.js';
import type { TestNamespace } from '../../src/framework/index.js';

describe('kubectl logs and exec (API server -> kubelet -> containerd)', () => {
  const { core } = kubeClients();
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'logs' });
    const pod = testboxPod('talker', [
      'bash',
      '-c',
      'echo "hello from $(cat /proc/sys/kernel/hostname)"; exec sleep 3600',
    ]);
    await core.createNamespacedPod({ namespace: ns.name, body: pod });
    await waitForPod(core, { namespace: ns.name, name: 'talker' }, podReady);
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it('kubectl logs returns the container output', async () => {
    const res = await kubectl(['logs', '-n', ns.name, 'talker']);
    expect(res.stderr).toBe('');
    expect(res.stdout).toBe('hello from talker\n');
  });

  it('kubectl exec runs a command in the container with its stdin, stdout and exit code', async () => {
    const res = await kubectl(
      ['exec', '-i', '-n', ns.name, 'talker', '--', 'bash', '-c', 'id -u; tr a-z A-Z; exit 7'],
      {
        input: 'shout\n',
      },
    );
    expect(res.stdout).toBe('1000\nSHOUT\n');
    expect(res.status).toBe(7);
  });
});
