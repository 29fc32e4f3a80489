/**
 * A condition on a value that can say, in words, what it expects. Timeouts quote `describe()`,
 * so a failing test says what it waited for instead of "timeout".
 */
export interface Predicate<T> {
  /** true when the value satisfies the condition. */
  test(value: T): boolean;
  /** what the condition expects, e.g. "pod Ready=True". */
  describe(): string;
}

/** Builds a predicate from a function and its description. */
export function predicate<T>(description: string, test: (value: T) => boolean): Predicate<T> {
  return { test, describe: () => description };
}

/** Options of {@link waitFor}. */
export interface WaitOptions {
  /** total time to wait (default 30 s). */
  timeoutMs?: number;
  /** pause between polls (default 250 ms). */
  intervalMs?: number;
  /** renders the last value for the timeout message (default: JSON, truncated). */
  show?: (value: unknown) => string;
}

/** Thrown by {@link waitFor} on timeout; its message names the predicate and the last value seen. */
export class WaitTimeoutError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'WaitTimeoutError';
  }
}

function defaultShow(value: unknown): string {
  // Maps and Sets print their entries (JSON.stringify would print {}).
  const replacer = (_key: string, v: unknown): unknown =>
    v instanceof Map ? Object.fromEntries(v) : v instanceof Set ? [...v] : v;
  const text = JSON.stringify(value, replacer) ?? String(value);
  return text.length > 500 ? `${text.slice(0, 500)}...` : text;
}

/**
 * Polls `fetch` until its result satisfies `until`, and returns that result. A fetch that throws
 * is retried (the object may not exist yet); the last error is kept as the timeout's cause.
 */
export async function waitFor<T>(
  fetch: () => Promise<T>,
  until: Predicate<T>,
  options: WaitOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const intervalMs = options.intervalMs ?? 250;
  const show = options.show ?? defaultShow;
  const deadline = Date.now() + timeoutMs;
  let last: { value: T } | undefined;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fetch();
      if (until.test(value)) return value;
      last = { value };
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const seen = last ? `last value: ${show(last.value)}` : 'no value was fetched';
  const error = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
  throw new WaitTimeoutError(
    `timed out after ${timeoutMs} ms waiting for ${until.describe()} (${seen}${error})`,
    {
      cause: lastError,
    },
  );
}
