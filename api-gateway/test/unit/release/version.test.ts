/**
 * The gateway reports the platform's one version (root package.json, generated into
 * @sandbox-platform/api by release/version.mjs): in its OpenAPI document and as the MCP server's
 * version in the initialize handshake.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { KEYS, buildTestApp, type TestApp } from '../../helpers/app.js';
import { connectMcp } from '../../helpers/mcp-client.js';

const rootVersion = (
  JSON.parse(readFileSync(join(import.meta.dirname, '../../../../package.json'), 'utf8')) as {
    version: string;
  }
).version;

describe('the gateway reports the root package.json version', () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await buildTestApp();
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await t.app.close();
  });

  it('as info.version of /openapi.json, with problem answers referring to one Problem schema', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    const doc = res.json<{
      info: { version: string };
      components: { schemas: { Problem: { required: string[] } } };
      paths: Record<string, Record<string, { responses: Record<string, { content?: object }> }>>;
    }>();
    expect(rootVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(doc.info.version).toBe(rootVersion);
    expect(doc.components.schemas.Problem.required).toEqual(['type', 'title', 'status']);
    const notFound = doc.paths['/v1/sessions/{name}']!.get!.responses['404']!;
    expect(notFound.content).toEqual({
      'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
    });
  });

  it('as the MCP server version of the initialize handshake', async () => {
    const client = await connectMcp(url, KEYS.a);
    try {
      expect(client.getServerVersion()).toEqual({ name: 'sandbox-platform', version: rootVersion });
    } finally {
      await client.close();
    }
  });
});
