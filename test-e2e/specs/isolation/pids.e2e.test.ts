/**
 * e2e: a PID limit per pod (the kubelet's podPidsLimit; localkube sets 1024). A session cannot
 * start more processes than the limit (fork fails with EAGAIN), and a fork bomb in one session
 * leaves other sessions' execs working and the node Ready.
 *
 * Under gVisor the sandbox's processes live inside the Sentry, not as host PIDs, so this spec runs
 * on runc sessions (the default runtime).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';

import { kubeClients, predicate, waitFor } from '../../src/framework/index.js';
import { createSession, deleteSession, gatewayClient, namespaceOf, uniqueName } from './support.js';

/** Processes the probe tries to start: well above the limit, harmless without one. */
const ATTEMPTS = 3000;

/** Forks children (each exec'd into a small `sleep`) until fork fails; prints how many started and the errno that stopped it. */
const FORK_PROBE = `python3 - <<'EOF'
import os, signal
pids, err = [], 0
try:
    for _ in range(${ATTEMPTS}):
        pid = os.fork()
        if pid == 0:
            os.execv('/bin/sleep', ['sleep', '60'])
        pids.append(pid)
except OSError as e:
    err = e.errno
for pid in pids:
    os.kill(pid, signal.SIGKILL)
for pid in pids:
    os.waitpid(pid, 0)
print(len(pids), err)
EOF`;

const nodeReady = (n: k8s.V1Node): boolean =>
  (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

describe('PID limit per sandbox pod', () => {
  const kube = kubeClients();
  const gw = gatewayClient('e2e');
  const ns = namespaceOf('e2e');
  const names = { bomb: uniqueName('pids-a'), bystander: uniqueName('pids-b') };

  beforeAll(async () => {
    await Promise.all([createSession(kube, ns, names.bomb), createSession(kube, ns, names.bystander)]);
  }, 240_000);

  afterAll(async () => {
    await deleteSession(kube, ns, names.bomb);
    await deleteSession(kube, ns, names.bystander);
  }, 60_000);

  it(`stops a session's processes below the limit (fork fails with EAGAIN before ${ATTEMPTS})`, async () => {
    const r = await gw.exec(names.bomb, { command: FORK_PROBE, timeoutSeconds: 120 });
    const [started, errno] = r.stdout.trim().split(' ').map(Number);
    console.log(`fork probe: ${started} children started, stopped by errno ${errno}`);
    expect(errno).toBe(11); // EAGAIN: the pids cgroup refused the fork
    expect(started).toBeLessThan(1024);
  }, 180_000);

  it('a fork bomb in one session leaves other sessions working and the node Ready', async () => {
    const bomb = gw.exec(names.bomb, {
      command: "timeout -s KILL 20 bash -c 'f() { f | f & }; f'; echo bomb-over",
      timeoutSeconds: 60,
    });
    // While the bomb runs: the other session's execs answer, one after another.
    for (let i = 0; i < 5; i++) {
      expect(await gw.exec(names.bystander, { command: `echo alive-${i}` })).toMatchObject({
        stdout: `alive-${i}\n`,
        exitCode: 0,
      });
    }
    await bomb.catch(() => undefined); // its own outcome is not the point; the others' is
    const node = await waitFor(
      async () => (await kube.core.listNode()).items[0]!,
      predicate('node Ready', nodeReady),
      { timeoutMs: 60_000 },
    );
    expect(nodeReady(node)).toBe(true);
    expect(await gw.exec(names.bystander, { command: 'echo still-alive' })).toMatchObject({ exitCode: 0 });
  }, 180_000);
});
