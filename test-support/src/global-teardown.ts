import { CONTROL_PLANE_KEY } from './global-setup.js';
import type { RunningControlPlane } from './localkube.js';

type GlobalWithControlPlane = typeof globalThis & { [CONTROL_PLANE_KEY]?: RunningControlPlane };

/**
 * jest globalTeardown of the integration tier: stops the control plane globalSetup started and
 * deletes its state dir (LOCALKUBE_KEEP=1 keeps it, with logs/<component>.log, for debugging).
 * An external INTEGRATION_KUBECONFIG cluster is left alone.
 */
export default async function globalTeardown(): Promise<void> {
  const g = globalThis as GlobalWithControlPlane;
  const cp = g[CONTROL_PLANE_KEY];
  if (!cp) return;
  const keepDir = process.env.LOCALKUBE_KEEP === '1';
  const started = Date.now();
  await cp.stop({ keepDir });
  process.stderr.write(`[localkube] control plane stopped in ${Date.now() - started} ms\n`);
  if (keepDir) process.stderr.write(`[localkube] kept control-plane state in ${cp.dir}\n`);
  delete g[CONTROL_PLANE_KEY];
}
