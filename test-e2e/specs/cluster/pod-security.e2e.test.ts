import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  apiStatus,
  createTestNamespace,
  kubeClients,
  kubectl,
  podReady,
  testboxPod,
  waitForPod,
} from '../../src/framework/index.js';
import type { TestNamespace } from '../../src/framework/index.js';

describe('Pod Security Admission "restricted"', () => {
  const { core } = kubeClients();
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, {
      prefix: 'psa',
      labels: { 'pod-security.kubernetes.io/enforce': 'restricted' },
    });
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it('runs a restricted pod: non-root, no capabilities, RuntimeDefault seccomp, read-only root', async () => {
    // testboxPod carries runAsNonRoot, drop ALL, seccomp RuntimeDefault, no privilege escalation
    // and a read-only root file system.
    await core.createNamespacedPod({ namespace: ns.name, body: testboxPod('restricted', ['sleep', '3600']) });
    await waitForPod(core, { namespace: ns.name, name: 'restricted' }, podReady);
    const probe = [
      'id -u',
      "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\\t ' ' '",
      'touch /probe 2>/dev/null && echo root-writable || echo root-read-only',
    ].join('; ');
    const res = await kubectl(['exec', '-n', ns.name, 'restricted', '--', 'bash', '-c', probe]);
    expect(res.stdout.split('\n')).toEqual([
      '1000',
      'CapEff: 0000000000000000',
      'NoNewPrivs: 1',
      'Seccomp: 2', // 2 = filter mode: the runtime's default profile is applied
      'root-read-only',
      '',
    ]);
  });

  it('rejects a pod that breaks the policy, naming the violations', async () => {
    const privileged = testboxPod('privileged', ['sleep', '3600'], (p) => {
      p.spec!.securityContext = {};
      p.spec!.containers[0]!.securityContext = { privileged: true };
    });
    const err = await core
      .createNamespacedPod({ namespace: ns.name, body: privileged })
      .catch((e: unknown) => e);
    expect(apiStatus(err)).toBe(403);
    const status = JSON.parse(String((err as { body?: unknown }).body)) as { message: string };
    expect(status.message).toContain('violates PodSecurity "restricted:latest"');
    expect(status.message).toContain(
      'privileged (container "main" must not set securityContext.privileged=true)',
    );
  });
});
