/** Counts Secrets and Pods as they appear in a namespace (watch ADDED events), with timestamps. */
import * as k8s from '@kubernetes/client-node';
import { LABELS, MANAGER_NAME } from '@sandbox-platform/api';

/** Running counters of one namespace. */
export interface ChildCounter {
  readonly pods: () => number;
  readonly secrets: () => number;
  /** Resolves with the time (ms since epoch) at which both counts reached `n`. */
  readonly reached: (n: number, timeoutMs: number) => Promise<number>;
  readonly stop: () => void;
}

/** Starts watching; resolves once both watches are connected. */
export async function countChildren(kc: k8s.KubeConfig, namespace: string): Promise<ChildCounter> {
  const seen = { pods: new Set<string>(), secrets: new Set<string>() };
  let last = 0;
  const watch = new k8s.Watch(kc);
  const query = { labelSelector: `${LABELS.managedBy}=${MANAGER_NAME}` };
  const controllers = await Promise.all(
    (['pods', 'secrets'] as const).map((resource) =>
      watch.watch(
        `/api/v1/namespaces/${namespace}/${resource}`,
        query,
        (type: string, obj: k8s.KubernetesObject) => {
          if (type !== 'ADDED' || !obj.metadata?.name) return;
          seen[resource].add(obj.metadata.name);
          last = Date.now();
        },
        (err: unknown) => {
          if (err)
            process.stderr.write(
              `watch ${resource} ended: ${err instanceof Error ? err.message : JSON.stringify(err)}\n`,
            );
        },
      ),
    ),
  );
  return {
    pods: () => seen.pods.size,
    secrets: () => seen.secrets.size,
    reached: async (n, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      while (seen.pods.size < n || seen.secrets.size < n) {
        if (Date.now() > deadline) {
          throw new Error(
            `only ${seen.pods.size} pods and ${seen.secrets.size} secrets of ${n} after ${timeoutMs} ms`,
          );
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      return last;
    },
    stop: () => controllers.forEach((c) => c.abort()),
  };
}
