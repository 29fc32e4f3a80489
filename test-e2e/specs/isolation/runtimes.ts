/**
 * The runtimes the agent and gateway transport specs run under. Apart from support.ts because it
 * records NOT RUN through the jest-bound not-run.ts: support.ts stays loadable by the benches,
 * which run as plain node bundles (bench-isolation, bench-probes and bench-hostile failed to start
 * with "Named export 'describe' not found" while support.ts imported it).
 */
import type * as k8s from '@kubernetes/client-node';

import { notRun } from '../../src/framework/not-run.js';
import { GVISOR, gvisorUnavailable, runcRuntimeClass, type RuntimeUnderTest } from './support.js';

/**
 * runc always (runcRuntimeClass); gVisor too when the cluster has RuntimeClass gvisor (localkube
 * registers it), unless E2E_GVISOR=0. The agent and gateway transport specs run once per entry
 * (describe.each); without gVisor its variants are recorded as NOT RUN in the e2e summary.
 */
export async function runtimesUnderTest(kc: k8s.KubeConfig): Promise<RuntimeUnderTest[]> {
  const runtimes: RuntimeUnderTest[] = [{ label: 'runc', runtimeClassName: await runcRuntimeClass(kc) }];
  const missing = await gvisorUnavailable(kc);
  if (missing === undefined) runtimes.push({ label: 'gVisor', runtimeClassName: GVISOR });
  else notRun('the gVisor variants of this file', missing);
  return runtimes;
}
