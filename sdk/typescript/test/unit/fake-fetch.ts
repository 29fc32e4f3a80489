/**
 * A scripted fetch for unit tests: each call takes the next step (an answer, or a thrown error)
 * and is recorded with its method, URL, headers and body.
 */
export type Step =
  | { status: number; body?: string | Uint8Array; headers?: Record<string, string>; chunks?: Uint8Array[] }
  | { throws: unknown }
  | { hang: true };

export interface Recorded {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: string | undefined;
}

export class FakeFetch {
  readonly calls: Recorded[] = [];
  /** Set when a streamed body was cancelled by the client. */
  cancelled = false;

  constructor(private readonly steps: Step[]) {}

  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const body = init?.body;
    this.calls.push({
      method: init?.method ?? 'GET',
      url: new URL(input instanceof Request ? input.url : input.toString()),
      headers: { ...(init?.headers as Record<string, string>) },
      body:
        typeof body === 'string'
          ? body
          : body instanceof Uint8Array
            ? new TextDecoder().decode(body)
            : undefined,
    });
    const step = this.steps.shift();
    if (!step) throw new Error('FakeFetch: no step left');
    if ('throws' in step) throw step.throws;
    if ('hang' in step) return this.hang(init?.signal ?? undefined);
    const headers = new Headers(step.headers ?? {});
    if (step.chunks) return new Response(this.stream(step.chunks), { status: step.status, headers });
    return new Response((step.body ?? null) as BodyInit | null, { status: step.status, headers });
  };

  private hang(signal: AbortSignal | undefined): Promise<Response> {
    return new Promise((_resolve, reject) => {
      signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
  }

  private stream(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
    const queue = [...chunks];
    return new ReadableStream<Uint8Array>({
      pull: (controller) => {
        const next = queue.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
      cancel: () => {
        this.cancelled = true;
      },
    });
  }
}

/** A problem+json answer. */
export function problem(
  status: number,
  slug: string,
  extra: { detail?: string; retryAfter?: string; reason?: string } = {},
): Step {
  const body: Record<string, unknown> = {
    type: `https://sandbox.dev/problems/${slug}`,
    title: `title of ${slug}`,
    status,
  };
  if (extra.detail) body.detail = extra.detail;
  if (extra.reason) body.reason = extra.reason;
  const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
  if (extra.retryAfter !== undefined) headers['retry-after'] = extra.retryAfter;
  return { status, body: JSON.stringify(body), headers };
}

/** A JSON answer. */
export function json(status: number, value: unknown): Step {
  return { status, body: JSON.stringify(value), headers: { 'content-type': 'application/json' } };
}

/** What undici throws when nothing listens on the port. */
export function refused(): Step {
  const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  return { throws: new TypeError('fetch failed', { cause }) };
}

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
