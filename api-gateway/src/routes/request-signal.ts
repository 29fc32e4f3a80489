/** An AbortSignal that fires when the client disconnects before its response was sent. */
import type { ServerResponse } from 'node:http';

/** The signal of a response and a function to stop listening once the work is done. */
export function responseSignal(res: ServerResponse): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  // 'close' fires both after a completed response and on a client disconnect; only the latter
  // leaves the response unfinished.
  const onClose = (): void => {
    if (!res.writableFinished) controller.abort();
  };
  res.once('close', onClose);
  return { signal: controller.signal, dispose: () => res.off('close', onClose) };
}
