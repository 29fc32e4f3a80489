/**
 * @sandbox-platform/gateway-client: a small typed client for the api-gateway REST API. No
 * dependencies beyond the platform's fetch (Node 20+). Errors are thrown as GatewayError carrying
 * the RFC 9457 problem (its `type` slug is stable; switch on it).
 */

import type {
  CreateSessionRequest,
  ExecRequest,
  ExecResult,
  ExecStreamEvent,
  Problem,
  Session,
  WriteFileResult,
} from './types.js';

export type {
  CreateSessionRequest,
  ExecRequest,
  ExecResult,
  ExecStreamEvent,
  OutputEncoding,
  Problem,
  Session,
  WriteFileResult,
} from './types.js';

/** A non-2xx answer of the gateway. */
export class GatewayError extends Error {
  readonly status: number;
  readonly problem: Problem;
  /** The slug of problem.type, e.g. "session-not-found". */
  readonly slug: string;
  /** Retry-After in seconds, when the gateway sent one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, problem: Problem, retryAfter: string | null) {
    super(`${status} ${problem.title}${problem.detail ? `: ${problem.detail}` : ''}`);
    this.name = 'GatewayError';
    this.status = status;
    this.problem = problem;
    this.slug = problem.type.split('/').pop() ?? '';
    this.retryAfterSeconds = retryAfter === null ? undefined : Number(retryAfter);
  }
}

/** Client options. */
export interface GatewayClientOptions {
  /** Base URL, e.g. http://gateway.sandbox-system:8080 */
  baseUrl: string;
  apiKey: string;
  /** Namespace for every call that names none (else the key's default). */
  namespace?: string;
  /** fetch implementation (tests); defaults to the global fetch. */
  fetch?: typeof fetch;
}

type Query = Record<string, string | undefined>;

/** Typed calls of the REST API. */
export class GatewayClient {
  private readonly base: string;
  private readonly fetchFn: typeof fetch;

  constructor(private readonly o: GatewayClientOptions) {
    if (!o.baseUrl) throw new Error('GatewayClient: baseUrl is required');
    if (!o.apiKey) throw new Error('GatewayClient: apiKey is required');
    this.base = o.baseUrl.replace(/\/+$/, '');
    this.fetchFn = o.fetch ?? fetch;
  }

  /** Create-or-get; `created` tells whether this call created it. */
  async createSession(req: CreateSessionRequest = {}): Promise<{ session: Session; created: boolean }> {
    const res = await this.call('POST', '/v1/sessions', {}, jsonBody(req));
    return { session: (await res.json()) as Session, created: res.status === 201 };
  }

  async getSession(name: string, namespace?: string): Promise<Session> {
    return (await this.call('GET', `/v1/sessions/${enc(name)}`, { namespace })).json() as Promise<Session>;
  }

  async listSessions(namespace?: string): Promise<Session[]> {
    const body = (await (await this.call('GET', '/v1/sessions', { namespace })).json()) as {
      items: Session[];
    };
    return body.items;
  }

  async deleteSession(name: string, namespace?: string): Promise<void> {
    await this.call('DELETE', `/v1/sessions/${enc(name)}`, { namespace });
  }

  /** Runs a command; a non-zero exit is a normal result (check exitCode). */
  async exec(name: string, req: ExecRequest, namespace?: string): Promise<ExecResult> {
    return (
      await this.call('POST', `/v1/sessions/${enc(name)}/exec`, { namespace }, jsonBody(req))
    ).json() as Promise<ExecResult>;
  }

  /** Runs a command and yields its output events as they arrive; the last one is `exit`. */
  async *execStream(name: string, req: ExecRequest, namespace?: string): AsyncGenerator<ExecStreamEvent> {
    const res = await this.call(
      'POST',
      `/v1/sessions/${enc(name)}/exec/stream`,
      { namespace },
      jsonBody(req),
    );
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line) yield JSON.parse(line) as ExecStreamEvent;
      }
    }
    if (buffered.trim()) yield JSON.parse(buffered) as ExecStreamEvent;
  }

  /** Uploads bytes to a workspace-relative path. */
  async writeFile(
    name: string,
    path: string,
    data: Uint8Array | string,
    namespace?: string,
  ): Promise<WriteFileResult> {
    const body = {
      body: typeof data === 'string' ? new TextEncoder().encode(data) : data,
      contentType: 'application/octet-stream',
    };
    return (
      await this.call('PUT', `/v1/sessions/${enc(name)}/files/${encPath(path)}`, { namespace }, body)
    ).json() as Promise<WriteFileResult>;
  }

  /** Downloads a workspace file's bytes. */
  async readFile(name: string, path: string, namespace?: string): Promise<Uint8Array> {
    const res = await this.call('GET', `/v1/sessions/${enc(name)}/files/${encPath(path)}`, { namespace });
    return new Uint8Array(await res.arrayBuffer());
  }

  private async call(
    method: string,
    path: string,
    query: Query,
    body?: { body: Uint8Array | string; contentType: string },
  ): Promise<Response> {
    const url = new URL(this.base + path);
    const namespace = query.namespace ?? this.o.namespace;
    if (namespace) url.searchParams.set('namespace', namespace);
    const headers: Record<string, string> = { authorization: `Bearer ${this.o.apiKey}` };
    if (body) headers['content-type'] = body.contentType;
    const res = await this.fetchFn(url, { method, headers, ...(body ? { body: body.body } : {}) });
    if (res.ok) return res;
    const text = await res.text();
    let problem: Problem;
    try {
      problem = JSON.parse(text) as Problem;
    } catch {
      problem = { type: 'about:blank', title: text.slice(0, 200) || res.statusText, status: res.status };
    }
    throw new GatewayError(res.status, problem, res.headers.get('retry-after'));
  }
}

function jsonBody(value: unknown): { body: string; contentType: string } {
  return { body: JSON.stringify(value), contentType: 'application/json' };
}

function enc(segment: string): string {
  return encodeURIComponent(segment);
}

function encPath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}
