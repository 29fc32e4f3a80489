/**
 * e2e: a session under gVisor (spec.runtimeClassName: gvisor). It becomes Ready, runs commands
 * through the gateway, and what it sees of the kernel is gVisor's (its kernel log, what dmesg
 * reads, is the Sentry's boot log; `uname -r` is the Sentry's "4.19.0-gvisor"), not the host's. The whole agent and gateway
 * transport specs also run under gVisor (test-e2e/specs/agent, test-e2e/specs/gateway).
 *
 * The pod's app container runs inside the pod's sandbox with no host process of its own; localkube's
 * runsc wrapper gives containerd's runc shim a waiter to watch (test-e2e/localkube/gvisor.go). The
 * last two cases are its regression tests: the agent's output reaches the pod log, and deleting the
 * session removes the pod (it stayed Terminating when the shim watched the sandbox's pid).
 *
 * NOT RUN (recorded in the e2e summary) where the cluster has no RuntimeClass gvisor (localkube
 * registers it with LOCALKUBE_GVISOR=true, the default) or E2E_GVISOR=0.
 */
import { readFileSync } from 'node:fs';

import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { podName } from '@sandbox-platform/api';

import { isNotFound, kubeClients, predicate, waitFor } from '../../src/framework/index.js';
import { describeIf, NOT_LOCAL_REASON, notRun } from '../../src/framework/not-run.js';
import {
  createSession,
  deleteSession,
  gatewayClient,
  GVISOR,
  gvisorUnavailable,
  namespaceOf,
  uniqueName,
} from '../isolation/support.js';

const kube = kubeClients();
const GVISOR_MISSING = await gvisorUnavailable(kube.kc);
const LOCAL = !process.env.E2E_KUBECONFIG;
/** Prints the kernel log (dmesg's source: klogctl(3, ...)) with python's ctypes. */
const KLOG =
  'import ctypes; b = ctypes.create_string_buffer(65536); ' +
  'n = ctypes.CDLL(None).klogctl(3, b, 65536); print(b.raw[:max(n, 0)].decode(errors="replace"))';

describeIf(GVISOR_MISSING)('a session under gVisor', () => {
  const gw = gatewayClient('e2e');
  const ns = namespaceOf('e2e');
  const name = uniqueName('gvisor');

  beforeAll(async () => {
    await createSession(kube, ns, name, { runtimeClassName: GVISOR });
  }, 240_000);

  afterAll(async () => {
    await deleteSession(kube, ns, name);
  }, 60_000);

  it('runs in a pod with runtimeClassName gvisor', async () => {
    const pod = await kube.core.readNamespacedPod({ name: podName(name), namespace: ns });
    expect(pod.spec?.runtimeClassName).toBe(GVISOR);
  });

  it("sees gVisor's kernel: the kernel log is the Sentry's, uname is gVisor's, not the host's", async () => {
    // The image has no dmesg(1); klogctl(SYSLOG_ACTION_READ_ALL) is what dmesg reads. Under runc
    // a non-root user gets EPERM there; under gVisor the Sentry answers with its own boot log.
    const r = await gw.exec(name, { command: `uname -r; python3 -c '${KLOG}' | head -3` });
    console.log(`under gVisor: ${r.stdout}`);
    expect(r.exitCode).toBe(0);
    const [release, ...klog] = r.stdout.trim().split('\n');
    expect(release).toMatch(/gvisor/);
    expect(klog.join('\n')).toMatch(/gVisor/);
    if (LOCAL) expect(release).not.toBe(readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim());
    else notRun("gVisor's uname differs from the host kernel's", NOT_LOCAL_REASON);
  });

  it('runs commands through the gateway (exec, env, exit codes)', async () => {
    const r = await gw.exec(name, { command: 'echo "$GREETING"; id -u; (exit 3)', env: { GREETING: 'hi' } });
    expect(r).toMatchObject({ stdout: 'hi\n1000\n', exitCode: 3 });
  });

  it("the agent's output reaches the pod log (the container's stdio, not runsc start's)", async () => {
    const pod = await kube.core.readNamespacedPod({ name: podName(name), namespace: ns });
    const container = pod.spec?.containers[0]?.name ?? '';
    const log = await waitFor(
      () => kube.core.readNamespacedPodLog({ name: podName(name), namespace: ns, container, tailLines: 20 }),
      predicate<string>('a log line of the agent', (l) => l.includes('"level":')),
      { timeoutMs: 30_000 },
    );
    console.log(`agent log under gVisor (last lines): ${log.slice(-300)}`);
  });

  // Last: it deletes the session.
  it("deleting the session removes its pod: the app container's exit reaches the kubelet", async () => {
    await deleteSession(kube, ns, name);
    const exists = async (): Promise<string> => {
      try {
        const pod = await kube.core.readNamespacedPod({ name: podName(name), namespace: ns });
        return `${pod.status?.phase ?? '?'}${pod.metadata?.deletionTimestamp ? ' (Terminating)' : ''}`;
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        throw err;
      }
    };
    await waitFor(
      exists,
      predicate<string>('the pod is gone', (s) => s === 'gone'),
      { timeoutMs: 120_000, intervalMs: 250 },
    );
  }, 150_000);
});
