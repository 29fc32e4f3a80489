/**
 * A watch of a list of objects (Pods of a label selector, one custom object by name), calling
 * back on every event as it arrives: for specs that must act at the moment an object changes (a
 * chaos kill at a claim or a request) or record every state an object went through, which polling
 * can miss. A watch the API server ends is started again after a pause (its first events then
 * repeat the current objects as ADDED).
 */
import * as k8s from '@kubernetes/client-node';

/** A running watch. */
export interface ResourceWatch {
  /** Errors of watches that ended (each was restarted). */
  readonly errors: readonly unknown[];
  /** Stops watching. */
  stop(): void;
}

/**
 * Starts watching `path` (a list URL, e.g. /api/v1/namespaces/x/pods) with the query (label or
 * field selector); resolves once the first watch request has been answered, so changes made after
 * that are seen. `onEvent` must not throw (it is called from the watch's stream).
 */
export async function watchResource<T>(
  kc: k8s.KubeConfig,
  path: string,
  query: { labelSelector?: string; fieldSelector?: string },
  onEvent: (type: string, obj: T) => void,
): Promise<ResourceWatch> {
  const watch = new k8s.Watch(kc);
  const errors: unknown[] = [];
  let stopped = false;
  let current: AbortController | undefined;
  const start = async (): Promise<void> => {
    current = await watch.watch(
      path,
      { ...query },
      (type: string, obj: T) => onEvent(type, obj),
      (err: unknown) => {
        if (stopped) return;
        if (err) errors.push(err);
        // After a pause: a watch refused at once (the API server restarting) must not spin.
        setTimeout(() => void start().catch((e: unknown) => errors.push(e)), 500);
      },
    );
  };
  await start();
  return {
    errors,
    stop: () => {
      stopped = true;
      current?.abort();
    },
  };
}

/** {@link watchResource} of the Pods of a namespace matching a label selector. */
export function watchPods(
  kc: k8s.KubeConfig,
  namespace: string,
  labelSelector: string,
  onEvent: (type: string, pod: k8s.V1Pod) => void,
): Promise<ResourceWatch> {
  return watchResource(kc, `/api/v1/namespaces/${namespace}/pods`, { labelSelector }, onEvent);
}
