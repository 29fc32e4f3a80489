/**
 * The operator's calls to a warm Pod's agent (docs/adr/0016-warm-pools.md): the signed one-shot
 * bind, and the check of which session an agent serves (after a restart of the operator in the
 * middle of a claim). Plain HTTP to the Pod IP on the agent port, as the gateway's calls; each call
 * has a deadline, answers are bounded, and the token never reaches a log.
 */
import { request } from 'node:http';

import { AGENT_PATHS, type BindRequest, type BindStatus } from '@sandbox-platform/api';

/** How a bind ended. */
export type BindOutcome =
  /** 200: the agent serves the session now. */
  | 'bound'
  /** 401: the agent refused (already bound, or the signature or the Pod did not match). */
  | 'refused'
  /** Anything else: no answer in time, a connection error, an unexpected status. */
  | 'failed';

/** The calls. */
export interface BindClient {
  bind(podIP: string, body: BindRequest): Promise<BindOutcome>;
  /** The session the agent serves, asked with the session token; undefined when refused (401). */
  status(podIP: string, token: string): Promise<BindStatus | 'refused' | 'failed'>;
}

/** Client settings. */
export interface BindClientOptions {
  /** The agent port (AGENT_PORT; tests use another). */
  readonly port: number;
  /** Deadline of one call. */
  readonly timeoutMs: number;
}

/** Largest answer read (a BindStatus or a problem is a few hundred bytes). */
const MAX_ANSWER_BYTES = 16 * 1024;

/** The client over node:http. */
export function createBindClient(opts: BindClientOptions): BindClient {
  return {
    bind: async (podIP, body) => {
      const answer = await call(opts, {
        host: podIP,
        method: 'POST',
        headers: {},
        body: JSON.stringify(body),
      });
      if (answer === 'failed') return 'failed';
      return answer.status === 200 ? 'bound' : answer.status === 401 ? 'refused' : 'failed';
    },
    status: async (podIP, token) => {
      const answer = await call(opts, {
        host: podIP,
        method: 'GET',
        headers: { authorization: `Bearer ${token}` },
      });
      if (answer === 'failed') return 'failed';
      if (answer.status === 401) return 'refused';
      if (answer.status !== 200) return 'failed';
      try {
        return JSON.parse(answer.body) as BindStatus;
      } catch {
        return 'failed';
      }
    },
  };
}

interface Answer {
  readonly status: number;
  readonly body: string;
}

interface Call {
  readonly host: string;
  readonly method: 'GET' | 'POST';
  readonly headers: Record<string, string>;
  readonly body?: string;
}

function call(opts: BindClientOptions, { host, method, headers, body }: Call): Promise<Answer | 'failed'> {
  return new Promise((resolve) => {
    const req = request(
      {
        host,
        port: opts.port,
        method,
        path: AGENT_PATHS.bind,
        agent: false,
        signal: AbortSignal.timeout(opts.timeoutMs),
        headers: {
          ...headers,
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        let size = 0;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) {
            req.destroy(new Error('the agent answer is too large'));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', () => resolve('failed'));
      },
    );
    req.on('error', () => resolve('failed'));
    req.end(body);
  });
}
