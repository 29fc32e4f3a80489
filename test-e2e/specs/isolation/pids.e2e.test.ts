/**
 * e2e: a PID limit per pod (the kubelet's podPidsLimit; localkube sets 1024, read here from the
 * kubelet's configz). A session cannot start more processes than the limit (fork fails with
 * EAGAIN), and a fork bomb in one session hits that limit (bash's forks fail with "Resource
 * temporarily unavailable", the container's task count reaches the limit) while other sessions'
 * execs keep working and the node stays Ready.
 *
 * Under gVisor the sandbox's processes live inside the Sentry, not as host PIDs, so this spec runs
 * on runc sessions (runtimeClassName runc where the cluster has it, the platform defaulting to
 * gVisor); it fails when the sessions would run under gVisor.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';

import { kubeClients, predicate, waitFor } from '../../src/framework/index.js';
import { PIDS_ATTEMPTS, REPORTS, TITLES, writeReport } from './report.js';
import {
  createSession,
  deleteSession,
  gatewayClient,
  GVISOR,
  namespaceOf,
  runcRuntimeClass,
  uniqueName,
} from './support.js';

/** Forks children (each exec'd into a small `sleep`) until fork fails; prints how many started and the errno that stopped it. */
const FORK_PROBE = `python3 - <<'EOF'
import os, signal
pids, err = [], 0
try:
    for _ in range(${PIDS_ATTEMPTS}):
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

/**
 * The fork bomb, run and watched by one python process that needs no fork once the bomb runs: it
 * starts the bomb in its own session and process group, samples the container's task count (the
 * pids cgroup's pids.current, v1 or v2, else /proc's processes) every 10 ms for 20 s, kills the
 * group (killpg until none is left), and counts bash's fork failures in the bomb's stderr. Prints
 * `eagain=N peak=M source=FILE killpg-rounds=R`.
 */
const BOMB_WATCHER = [
  'import os, signal, subprocess, sys, time',
  'd, seconds = sys.argv[1], float(sys.argv[2])',
  'files = [f for f in ("/sys/fs/cgroup/pids/pids.current", "/sys/fs/cgroup/pids.current") if os.path.exists(f)]',
  'def count():',
  '    if files:',
  '        with open(files[0]) as f: return int(f.read())',
  '    return sum(1 for p in os.listdir("/proc") if p.isdigit())',
  'err = open(d + "/err", "w")',
  'bomb = subprocess.Popen(["bash", "-c", "f() { f | f & }; f"], stderr=err, start_new_session=True)',
  'peak, end = 0, time.time() + seconds',
  'while time.time() < end:',
  '    peak = max(peak, count()); time.sleep(0.01)',
  'rounds = 0',
  'while True:',
  '    try: os.killpg(bomb.pid, signal.SIGKILL)',
  '    except ProcessLookupError: break',
  '    bomb.poll(); rounds += 1; time.sleep(0.01)',
  'bomb.wait(); err.close()',
  'eagain = sum(1 for line in open(d + "/err", errors="replace") if "Resource temporarily unavailable" in line)',
  'print("eagain=%d peak=%d source=%s killpg-rounds=%d" % (eagain, peak, files[0] if files else "/proc", rounds))',
].join('\n');

/** The bomb for 20 s (BOMB_WATCHER), its files in a directory of the workspace. */
const BOMB = `d=$(mktemp -d -p "$HOME") && python3 -c '${BOMB_WATCHER}' "$d" 20; rm -rf "$d"`;

const nodeReady = (n: k8s.V1Node): boolean =>
  (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

describe('PID limit per sandbox pod', () => {
  const kube = kubeClients();
  const gw = gatewayClient('e2e');
  const ns = namespaceOf('e2e');
  const names = { bomb: uniqueName('pids-a'), bystander: uniqueName('pids-b') };
  let limit = 0;

  beforeAll(async () => {
    const runtimeClassName = await runcRuntimeClass(kube.kc);
    const [bomb] = await Promise.all([
      createSession(kube, ns, names.bomb, { runtimeClassName }),
      createSession(kube, ns, names.bystander, { runtimeClassName }),
    ]);
    const pod = await kube.core.readNamespacedPod({ namespace: ns, name: bomb.status!.podName! });
    if (pod.spec?.runtimeClassName === GVISOR) {
      throw new Error(
        `the PID-limit spec needs runc sessions (gVisor's processes are not host PIDs) and ${ns} runs ` +
          `them under gVisor: give the cluster RuntimeClass runc and allow it in ${ns} (chart policy.namespaces)`,
      );
    }
    limit = await podPidsLimit(kube.core, pod.spec!.nodeName!);
  }, 240_000);

  afterAll(async () => {
    await deleteSession(kube, ns, names.bomb);
    await deleteSession(kube, ns, names.bystander);
  }, 60_000);

  it(
    TITLES.pidsProbe,
    async () => {
      const r = await gw.exec(names.bomb, { command: FORK_PROBE, timeoutSeconds: 120 });
      const [started, errno] = r.stdout.trim().split(' ').map(Number);
      writeReport(REPORTS.pids, { attempts: PIDS_ATTEMPTS, started: started!, errno: errno! });
      console.log(
        `fork probe: ${started} children started, stopped by errno ${errno} (podPidsLimit ${limit})`,
      );
      expect(limit).toBeGreaterThan(0);
      expect(errno).toBe(11); // EAGAIN: the pids cgroup refused the fork
      expect(started).toBeLessThan(limit);
    },
    180_000,
  );

  it('a fork bomb hits the limit, and leaves other sessions working and the node Ready', async () => {
    const bomb = gw.exec(names.bomb, { command: BOMB, timeoutSeconds: 90 });
    // While the bomb runs: the other session's execs answer, one after another.
    for (let i = 0; i < 5; i++) {
      expect(await gw.exec(names.bystander, { command: `echo alive-${i}` })).toMatchObject({
        stdout: `alive-${i}\n`,
        exitCode: 0,
      });
    }
    const out = (await bomb).stdout;
    console.log(`fork bomb (podPidsLimit ${limit}): ${out.trim()}`);
    const m = /eagain=(\d+) peak=(\d+) /.exec(out);
    expect(m).not.toBeNull();
    const [eagain, peak] = [Number(m![1]), Number(m![2])];
    expect(eagain).toBeGreaterThan(0); // bash's forks failed: the limit stopped the bomb
    // The container's tasks reached the pod's limit (the pause container holds one more).
    expect(peak).toBeGreaterThanOrEqual(limit - PEAK_SLACK);
    expect(peak).toBeLessThanOrEqual(limit);
    const node = await waitFor(
      async () => (await kube.core.listNode()).items[0]!,
      predicate('node Ready', nodeReady),
      { timeoutMs: 60_000 },
    );
    expect(nodeReady(node)).toBe(true);
    expect(await gw.exec(names.bystander, { command: 'echo still-alive' })).toMatchObject({ exitCode: 0 });
  }, 180_000);
});

/** Tasks of the pod outside the sampled container (the pause process) and exits between samples. */
const PEAK_SLACK = 8;

/** The kubelet's podPidsLimit on `node`, from its configz (through the API server's node proxy). */
async function podPidsLimit(core: k8s.CoreV1Api, node: string): Promise<number> {
  const raw = await core.connectGetNodeProxyWithPath({ name: node, path: 'configz' });
  const config = (typeof raw === 'string' ? JSON.parse(raw) : raw) as {
    kubeletconfig?: { podPidsLimit?: number };
  };
  return config.kubeletconfig?.podPidsLimit ?? 0;
}
