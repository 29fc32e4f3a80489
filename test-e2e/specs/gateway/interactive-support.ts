/**
 * Helpers of the gateway's interactive specs (interactive, interactive-stdin): the e2e setup's
 * gateway URL and API keys, one REST call with a key, the problem+json check, a bounded poll, and a
 * session created through the gateway for a describe block (deleted after it).
 */
import { afterAll, beforeAll, expect } from '@jest/globals';

import { uniqueName } from '../isolation/support.js';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`the gateway's interactive specs need ${name} from the e2e setup`);
  return value;
}

export const BASE = env('E2E_GATEWAY_URL');
export const KEY = env('E2E_GATEWAY_API_KEY');
export const OTHER_KEY = env('E2E_OTHER_API_KEY');

export interface Reply {
  status: number;
  type: string;
  body: Record<string, unknown>;
}

/** One REST call to the gateway with an API key; the body parsed when it is JSON. */
export async function api(method: string, path: string, body?: unknown, key = KEY): Promise<Reply> {
  const res = await fetch(new URL(path, BASE), {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  return {
    status: res.status,
    type,
    body: type.includes('json') && text ? (JSON.parse(text) as Reply['body']) : { text },
  };
}

export function expectProblem(r: Reply, status: number, slug: string): void {
  expect({ status: r.status, type: r.body.type }).toEqual({
    status,
    type: `https://sandbox.dev/problems/${slug}`,
  });
  expect(r.type).toMatch(/^application\/problem\+json/);
}

/** Polls until `check` returns a value (not undefined), or fails with what it last saw. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  tries = 100,
): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * A session of the e2e tenant created through the gateway before the describe block's tests (ready:
 * an exec answers) and deleted after them. Call inside `describe`.
 */
export function gatewaySession(prefix: string): { name: string; path: string } {
  const name = uniqueName(prefix);
  const path = `/v1/sessions/${name}`;
  beforeAll(async () => {
    // Create-or-get is idempotent by name, and `true` harmless to run twice: both are retried when
    // the connection is closed before an answer (a kept-alive connection to a gateway replica that
    // a previous spec's helm upgrade replaced; CI of 285644c lost the whole spec to one).
    const created = await eventually(
      'the session to be created',
      () => api('POST', '/v1/sessions', { name }).catch(() => undefined),
      5,
    );
    expect([200, 201]).toContain(created.status);
    // exec waits (bounded) for the session to be Ready.
    await eventually(
      'the session to be ready',
      async () => {
        const r = await api('POST', `${path}/exec`, { command: 'true', waitSeconds: 60 }).catch(
          () => undefined,
        );
        return r?.status === 200 ? r : undefined;
      },
      5,
    );
  }, 240_000);
  afterAll(async () => {
    await api('DELETE', path);
  }, 60_000);
  return { name, path };
}
