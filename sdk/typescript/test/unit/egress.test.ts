/** Egress rules and the audit trail in the TypeScript SDK, against a scripted fetch. */
import { describe, expect, it } from '@jest/globals';

import { PolicyViolationError, SandboxClient } from '../../src/index.js';
import { FakeFetch, json, problem, refused, type Step } from './fake-fetch.js';

function client(steps: Step[]): { fake: FakeFetch; c: SandboxClient } {
  const fake = new FakeFetch(steps);
  const c = new SandboxClient({
    baseUrl: 'http://gw.test:8080',
    apiKey: 'k-123',
    namespace: 'team-a',
    fetch: fake.fetch,
    retry: { initialDelayMs: 1 },
  });
  return { fake, c };
}

const EGRESS = { rules: [{ host: 'pypi.org', ports: [443] }], inheritNamespaceDefaults: false };

describe('egress and audit', () => {
  it('sets (PUT, retried as idempotent) and reads the rules', async () => {
    const { fake, c } = client([
      refused(),
      json(200, { name: 's1', namespace: 'team-a', egress: EGRESS }),
      json(200, { name: 's1', namespace: 'team-a', egress: EGRESS }),
    ]);
    expect(await c.setEgress('s1', EGRESS)).toEqual(EGRESS);
    expect(await c.getEgress('s1')).toEqual(EGRESS);
    expect(fake.calls.map((r) => [r.method, r.url.pathname, r.url.searchParams.get('namespace')])).toEqual([
      ['PUT', '/v1/sessions/s1/egress', 'team-a'],
      ['PUT', '/v1/sessions/s1/egress', 'team-a'],
      ['GET', '/v1/sessions/s1/egress', 'team-a'],
    ]);
    expect(JSON.parse(fake.calls[0]!.body!)).toEqual(EGRESS);
  });

  it('a host the policy refuses is a PolicyViolationError', async () => {
    const { c } = client([
      problem(403, 'policy-violation', { detail: 'spec.egress.rules host evil.example is not allowed' }),
    ]);
    await expect(c.setEgress('s1', { rules: [{ host: 'evil.example' }] })).rejects.toBeInstanceOf(
      PolicyViolationError,
    );
  });

  it('pages the audit records and verifies the chain', async () => {
    const page = { records: [], lastSeq: 7, nextSeq: 7 };
    const verdict = {
      valid: false,
      records: 7,
      firstSeq: 1,
      lastSeq: 7,
      brokenAt: 3,
      reason: 'hash-mismatch',
    };
    const { fake, c } = client([json(200, page), json(200, verdict)]);
    expect(await c.auditRecords('s1', { afterSeq: 5, limit: 2 })).toEqual(page);
    expect(await c.verifyAudit('s1')).toEqual(verdict);
    expect(fake.calls[0]!.url.search).toBe('?afterSeq=5&limit=2&namespace=team-a');
    expect(fake.calls[1]!.url.pathname).toBe('/v1/sessions/s1/audit/verify');
  });
});
