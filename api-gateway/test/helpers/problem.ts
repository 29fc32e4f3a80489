/** Assertions on problem+json replies. */
import { expect } from '@jest/globals';
import type { LightMyRequestResponse } from 'fastify';

/** Expects an RFC 9457 reply with this status and problem slug; returns the body. */
export function expectProblem(
  res: LightMyRequestResponse,
  status: number,
  slug: string,
): Record<string, unknown> {
  const body = res.json<Record<string, unknown>>();
  expect({ status: res.statusCode, type: body.type }).toEqual({
    status,
    type: `https://sandbox.dev/problems/${slug}`,
  });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(body.status).toBe(status);
  expect(typeof body.title).toBe('string');
  return body;
}
