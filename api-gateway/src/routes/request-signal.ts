/**
 * A signal that fires when the client disconnects before its response was sent. Every exec and
 * file request makes one, so it is a small object on the response's 'close' event rather than an
 * AbortController (whose EventTarget costs a measurable share of a short exec's time).
 */
import type { ServerResponse } from 'node:http';

import type { CancelSignal } from '../exec/types.js';

/** A one-shot abort signal with AbortSignal's listener semantics (no replay after the abort). */
export class ResponseSignal implements CancelSignal {
  aborted = false;
  private listeners: Array<() => void> | undefined;

  /** Listeners are called at most once whatever `options` say: the signal aborts only once. */
  addEventListener(_type: 'abort', listener: () => void, _options?: { once?: boolean }): void {
    if (this.aborted) return;
    const l = (this.listeners ??= []);
    if (!l.includes(listener)) l.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const l = this.listeners;
    const i = l ? l.indexOf(listener) : -1;
    if (i >= 0) l!.splice(i, 1);
  }

  /** Marks the signal aborted and calls each listener once. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const l = this.listeners;
    this.listeners = undefined;
    if (l) for (const fn of l) fn();
  }
}

/** The signal of a response and a function to stop listening once the work is done. */
export function responseSignal(res: ServerResponse): { signal: CancelSignal; dispose: () => void } {
  const signal = new ResponseSignal();
  // 'close' fires both after a completed response and on a client disconnect; only the latter
  // leaves the response unfinished.
  const onClose = (): void => {
    if (!res.writableFinished) signal.abort();
  };
  res.once('close', onClose);
  return { signal, dispose: () => res.off('close', onClose) };
}
