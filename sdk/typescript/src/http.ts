/**
 * One HTTP call to the gateway: URL and auth, a deadline, bounded reading of answers, problem+json
 * turned into typed errors, and the retry rule. Retries happen only for calls the caller marked
 * idempotent (reads, create-or-get by name, delete, file upload: sending them twice has the effect
 * of sending them once), and only when the gateway could not be reached or answered 429 or 503 with
 * Retry-After. An exec is never marked idempotent: a command must never run twice.
 */
import { ConnectionError, ProtocolError, SandboxError, TimeoutError, errorFromProblem } from './errors.js';
import type { Problem } from './types.js';

/** Retry policy of idempotent calls. */
export interface RetryOptions {
  /** Attempts after the first (default 2; 0 turns retries off). */
  retries?: number;
  /** First backoff after a connection failure, doubled per attempt (default 250 ms). */
  initialDelayMs?: number;
  /** Longest wait before a retry; a longer Retry-After is not waited for (default 10 s). */
  maxDelayMs?: number;
}

/** What an HTTP call needs from the client. */
export interface HttpConfig {
  baseUrl: string;
  apiKey: string;
  fetch: typeof fetch;
  headers: Record<string, string>;
  retry: Required<RetryOptions>;
  /** Largest JSON or file answer read into memory. */
  maxResponseBytes: number;
}

/** One call. */
export interface CallSpec {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  namespace?: string | undefined;
  /** A stream body (streamed stdin) is sent as it is produced, never retried. */
  body?: { data: string | Uint8Array | ReadableStream<Uint8Array>; contentType: string };
  /** Safe to send twice: enables the retry rule. */
  idempotent: boolean;
  /** Client-side deadline of the whole call including retries (undefined: none). */
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Called before each retry (a delete uses it: a 404 after a retry means an earlier attempt arrived). */
  onRetry?: () => void;
}

/** An answer whose status was 2xx, with a helper to read it within the size bound. */
export interface OkResponse {
  response: Response;
  /** Number of attempts it took (1 when not retried). */
  attempts: number;
  /** Cancels the deadline timer; call when done with the body. */
  done(): void;
  /** The signal of the call (aborted on deadline or by the caller). */
  signal: AbortSignal;
}

/** Answers that say the call was refused before any work and when to come back (with Retry-After). */
const RETRYABLE_STATUS = new Set([429, 503]);

/** Sends a call and returns its 2xx answer, or throws a SandboxError. */
export async function send(config: HttpConfig, spec: CallSpec): Promise<OkResponse> {
  const deadline = deadlineSignal(spec.timeoutMs, spec.signal);
  const url = buildUrl(config.baseUrl, spec.path, spec.namespace);
  try {
    for (let attempt = 1; ; attempt++) {
      const outcome = await attemptOnce(config, spec, url, deadline);
      if (outcome.ok)
        return {
          response: outcome.ok,
          attempts: attempt,
          done: () => deadline.clear(),
          signal: deadline.signal,
        };
      const waitMs = retryDelay(config.retry, spec, attempt, outcome.error);
      if (waitMs === undefined) throw outcome.error;
      await sleep(waitMs, deadline.signal);
      spec.onRetry?.();
    }
  } catch (err) {
    deadline.clear();
    throw deadline.translate(err, `${spec.method} ${url.pathname}`);
  }
}

type Attempt = { ok: Response; error?: undefined } | { ok?: undefined; error: SandboxError };

async function attemptOnce(
  config: HttpConfig,
  spec: CallSpec,
  url: URL,
  deadline: Deadline,
): Promise<Attempt> {
  const headers: Record<string, string> = {
    ...config.headers,
    authorization: `Bearer ${config.apiKey}`,
    accept: 'application/json, application/x-ndjson, application/octet-stream, application/problem+json',
  };
  if (spec.body) headers['content-type'] = spec.body.contentType;
  let res: Response;
  try {
    res = await config.fetch(url, {
      method: spec.method,
      headers,
      signal: deadline.signal,
      ...(spec.body ? { body: spec.body.data as NonNullable<RequestInit['body']> } : {}),
      // Node's fetch sends a stream body only in half-duplex mode (the answer may arrive meanwhile).
      ...(spec.body && typeof spec.body.data === 'object' && !(spec.body.data instanceof Uint8Array)
        ? ({ duplex: 'half' } as RequestInit)
        : {}),
    });
  } catch (err) {
    if (deadline.signal.aborted) throw err;
    return { error: new ConnectionError(url.origin, describeFetchFailure(err), { cause: err }) };
  }
  if (res.ok) return { ok: res };
  return { error: await problemError(res, config.maxResponseBytes) };
}

/** Milliseconds to wait before the next attempt, or undefined when this error is final. */
function retryDelay(
  retry: Required<RetryOptions>,
  spec: CallSpec,
  attempt: number,
  error: SandboxError,
): number | undefined {
  if (!spec.idempotent || attempt > retry.retries) return undefined;
  if (error instanceof ConnectionError) {
    return Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** (attempt - 1));
  }
  const status = (error as { status?: number }).status;
  const after = (error as { retryAfterSeconds?: number }).retryAfterSeconds;
  if (
    status !== undefined &&
    RETRYABLE_STATUS.has(status) &&
    after !== undefined &&
    after * 1000 <= retry.maxDelayMs
  ) {
    return after * 1000;
  }
  return undefined;
}

/** Reads a non-2xx answer into a typed GatewayError (a synthetic problem when the body is not one). */
async function problemError(res: Response, maxBytes: number): Promise<SandboxError> {
  let text = '';
  try {
    text = new TextDecoder().decode(await readBounded(res, Math.min(maxBytes, 64 * 1024)));
  } catch {
    // An unreadable or oversized error body still yields the status-based error below.
  }
  const problem = parseProblem(text, res);
  return errorFromProblem(res.status, problem, res.headers.get('retry-after'));
}

function parseProblem(text: string, res: Response): Problem {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (isProblem(parsed)) return parsed;
  } catch {
    // not JSON: e.g. an HTML page of a proxy in front of the gateway
  }
  const title = text.trim().slice(0, 200) || res.statusText || `HTTP ${res.status}`;
  return { type: 'about:blank', title, status: res.status };
}

function isProblem(value: unknown): value is Problem {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.type === 'string' && typeof v.title === 'string';
}

/**
 * Reads a body into memory, refusing more than `maxBytes` (from Content-Length at once, else while
 * reading): the gateway relays what a sandbox produced, which is hostile input.
 */
export async function readBounded(res: Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel();
    throw new ProtocolError(`answer of ${declared} bytes is larger than the limit of ${maxBytes}`);
  }
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new ProtocolError(`answer is larger than the limit of ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return concat(chunks, total);
}

/** Reads a JSON answer (bounded). */
export async function readJson<T>(ok: OkResponse, maxBytes: number): Promise<T> {
  try {
    const bytes = await readBounded(ok.response, maxBytes);
    try {
      return JSON.parse(new TextDecoder().decode(bytes)) as T;
    } catch (err) {
      throw new ProtocolError('the gateway answered with invalid JSON', { cause: err });
    }
  } finally {
    ok.done();
  }
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1 && chunks[0]) return chunks[0];
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/** The call's URL: base + path + ?namespace=. */
export function buildUrl(baseUrl: string, path: string, namespace: string | undefined): URL {
  const url = new URL(baseUrl.replace(/\/+$/, '') + path);
  if (namespace) url.searchParams.set('namespace', namespace);
  return url;
}

/** A readable cause of a failed fetch: Node's undici puts the system error code in `cause`. */
export function describeFetchFailure(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  const code = errorCode(cause) ?? errorCode(err);
  if (code) return code === 'ECONNREFUSED' ? 'connection refused (ECONNREFUSED)' : code;
  if (cause instanceof Error) return cause.message;
  return err instanceof Error ? err.message : String(err);
}

function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, errors } = err as { code?: unknown; errors?: unknown };
  if (typeof code === 'string') return code;
  // An AggregateError of every address tried (localhost: ::1 and 127.0.0.1).
  if (Array.isArray(errors)) return errors.map(errorCode).find((c) => c !== undefined);
  return undefined;
}

interface Deadline {
  signal: AbortSignal;
  clear(): void;
  /** Turns an abort caused by the deadline into a TimeoutError; passes everything else through. */
  translate(err: unknown, what: string): unknown;
}

/** A signal aborted by the caller's signal or after `timeoutMs`, whichever comes first. */
function deadlineSignal(timeoutMs: number | undefined, outer: AbortSignal | undefined): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          controller.abort(new TimeoutError(`no answer within ${timeoutMs} ms`));
        }, timeoutMs);
  const onAbort = (): void => controller.abort(outer?.reason);
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    clear(): void {
      if (timer !== undefined) clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
    translate(err: unknown, what: string): unknown {
      if (!timedOut || (err instanceof SandboxError && !(err instanceof TimeoutError))) return err;
      return new TimeoutError(`${what}: no answer within ${timeoutMs} ms`, { cause: err });
    },
  };
}

/** Waits, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
