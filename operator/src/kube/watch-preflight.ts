/**
 * Waits until the API server accepts a watch on a path. dot-i exits the process on any watch
 * error, and a watch issued right after a CRD was established, or while the API server's watch
 * cache (re)initializes, is answered 429 Too Many Requests (Retry-After: 1); a missing CRD is 404.
 * Probing with client-node first, retrying with a capped backoff, turns those start-up races into
 * a wait with a log line instead of a crash loop.
 */
import * as k8s from '@kubernetes/client-node';

import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';

/** Resolves once a watch on `path` is answered 200; retries until then or until `signal` aborts. */
export async function waitUntilWatchable(
  kc: k8s.KubeConfig,
  path: string,
  logger: Logger,
  signal?: AbortSignal,
): Promise<void> {
  const watch = new k8s.Watch(kc);
  for (let attempt = 1; !signal?.aborted; attempt++) {
    const error = await probe(watch, path);
    if (error === undefined) return;
    const delayMs = Math.min(250 * 2 ** Math.min(attempt - 1, 6), 10_000);
    logger.warn('watch not accepted yet; waiting before starting the session watch', {
      path,
      attempt,
      retryInMs: delayMs,
      ...errorFields(error),
    });
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
}

/** One watch request: undefined when it was accepted, else the error. */
async function probe(watch: k8s.Watch, path: string): Promise<unknown> {
  let error: unknown;
  let accepted = false;
  const controller = await watch.watch(
    path,
    { timeoutSeconds: 1, allowWatchBookmarks: false },
    () => undefined,
    (err: unknown) => {
      if (!accepted && err) error = err;
    },
  );
  accepted = true;
  controller.abort();
  return error;
}
