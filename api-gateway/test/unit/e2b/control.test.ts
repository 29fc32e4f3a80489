/** The control API's pure parts: timeouts, templates, views and the list (control/*.ts). */
import { describe, expect, it } from '@jest/globals';
import type { SandboxSession } from '@sandbox-platform/api';

import type { SessionPolicy } from '../../../src/config.js';
import { endAt, extended, newLifecycle, retimed } from '../../../src/e2b/control/lifecycle.js';
import { listPage, metadataFilter } from '../../../src/e2b/control/listing.js';
import { e2bStatus } from '../../../src/e2b/control/routes.js';
import { resolveTemplate, templateOf } from '../../../src/e2b/control/templates.js';
import {
  cpuCount,
  detailAnswer,
  memoryMB,
  metadataOf,
  METADATA_ANNOTATION,
  sandboxAnswer,
} from '../../../src/e2b/control/views.js';
import { ProblemError } from '../../../src/errors.js';
import { session } from '../../helpers/sessions.js';

const POLICY: SessionPolicy = {
  maxEnvBytes: 1000,
  defaultIdleTimeoutSeconds: 1800,
  maxIdleTimeoutSeconds: 3600,
  maxLifetimeSeconds: 7200,
  allowedExecTransports: ['Agent'],
};
const CREATED = Date.parse('2030-01-01T00:00:00Z');

function withMeta(
  meta: Record<string, string>,
  created = '2030-01-01T00:00:00Z',
): (s: SandboxSession) => void {
  return (s) => {
    s.metadata.creationTimestamp = created;
    s.metadata.annotations = { [METADATA_ANNOTATION]: JSON.stringify(meta) };
  };
}

describe('timeouts', () => {
  it('kill: lifetime = timeout (at least 60), idle = timeout (at most the maximum)', () => {
    expect(newLifecycle(300, 'kill', POLICY)).toEqual({ idleTimeoutSeconds: 300, maxLifetimeSeconds: 300 });
    expect(newLifecycle(10, 'kill', POLICY)).toEqual({ idleTimeoutSeconds: 10, maxLifetimeSeconds: 60 });
    expect(newLifecycle(5000, 'kill', POLICY)).toEqual({
      idleTimeoutSeconds: 3600,
      maxLifetimeSeconds: 5000,
    });
  });

  it('pause: idle = timeout, the gateway maximum lifetime', () => {
    expect(newLifecycle(300, 'pause', POLICY)).toEqual({ idleTimeoutSeconds: 300, maxLifetimeSeconds: 7200 });
  });

  it('refuses 0 and more than the maximum lifetime (400)', () => {
    expect(() => newLifecycle(0, 'kill', POLICY)).toThrow(ProblemError);
    expect(() => newLifecycle(7201, 'kill', POLICY)).toThrow(/maximum sandbox lifetime/);
  });

  it('setTimeout counts from now: age + timeout', () => {
    const s = session('a');
    expect(retimed(s, 600, CREATED + 1000 * 1000, POLICY)).toEqual({
      idleTimeoutSeconds: 600,
      maxLifetimeSeconds: 1600,
    });
    expect(() => retimed(s, 7000, CREATED + 1000 * 1000, POLICY)).toThrow(/maximum lifetime/);
    const paused = session('p', 'team-a', (x) => void (x.spec.shutdownPolicy = 'Suspend'));
    expect(retimed(paused, 600, CREATED + 1000, POLICY)).toEqual({
      idleTimeoutSeconds: 600,
      maxLifetimeSeconds: 86400,
    });
  });

  it('connect only extends; endAt is the operator expiry or creation + lifetime', () => {
    const s = session('a', 'team-a', (x) => void (x.spec.maxLifetimeSeconds = 600));
    expect(endAt(s, CREATED).toISOString()).toBe('2030-01-01T00:10:00.000Z');
    expect(extended(s, 300, CREATED + 60_000, POLICY)).toBeUndefined();
    expect(extended(s, 900, CREATED + 60_000, POLICY)).toEqual({
      idleTimeoutSeconds: 900,
      maxLifetimeSeconds: 960,
    });
    s.status = { expiresAt: '2030-01-01T00:05:00Z' };
    expect(endAt(s, CREATED).toISOString()).toBe('2030-01-01T00:05:00.000Z');
  });
});

describe('templates', () => {
  const pools = {
    poolExists: (ns: string, name: string) =>
      Promise.resolve(ns === 'team-a' && (name === 'py' || name === 'base')),
  };

  it('a pool of that name, then base, then an image reference; else 404', async () => {
    await expect(resolveTemplate('py', 'team-a', pools)).resolves.toEqual({ kind: 'pool', name: 'py' });
    await expect(resolveTemplate('base', 'team-a', pools)).resolves.toEqual({ kind: 'pool', name: 'base' });
    await expect(resolveTemplate('base', 'team-b', pools)).resolves.toEqual({ kind: 'default' });
    await expect(resolveTemplate('registry.local/img:1', 'team-a', pools)).resolves.toEqual({
      kind: 'image',
      image: 'registry.local/img:1',
    });
    await expect(resolveTemplate('py', 'team-b', pools)).rejects.toMatchObject({ slug: 'not-found' });
    await expect(resolveTemplate('bad image;rm', 'team-a', pools)).rejects.toMatchObject({
      slug: 'not-found',
    });
  });

  it('a session names its template by pool, image or base', () => {
    expect(templateOf({ poolRef: { name: 'py' } })).toBe('py');
    expect(templateOf({ image: 'r/i:1' })).toBe('r/i:1');
    expect(templateOf({})).toBe('base');
  });
});

describe('views', () => {
  it('reads quantities and metadata (anything malformed reads as none)', () => {
    expect([cpuCount('2'), cpuCount('500m'), cpuCount(3), cpuCount('x'), cpuCount(undefined)]).toEqual([
      2, 1, 3, 0, 0,
    ]);
    expect([memoryMB('512Mi'), memoryMB('1G'), memoryMB('1Gi'), memoryMB('junk')]).toEqual([
      512, 954, 1024, 0,
    ]);
    expect(metadataOf(session('a', 'team-a', withMeta({ k: 'v' })))).toEqual({ k: 'v' });
    const broken = session(
      'b',
      'team-a',
      (s) => void (s.metadata.annotations = { [METADATA_ANNOTATION]: '[1' }),
    );
    expect(metadataOf(broken)).toEqual({});
  });

  it('answers create and get in E2B shapes, with the token', () => {
    const s = session('a', 'team-a', (x) => void (x.spec.suspend = true));
    expect(sandboxAnswer(s, 'tok')).toMatchObject({
      sandboxID: 'a.team-a',
      templateID: 'base',
      envdAccessToken: 'tok',
      envdVersion: '0.5.7',
      domain: null,
    });
    expect(detailAnswer(s, 'tok', CREATED)).toMatchObject({
      state: 'paused',
      startedAt: '2030-01-01T00:00:00.000Z',
      lifecycle: { autoResume: true, onTimeout: 'kill' },
    });
  });

  it('maps problems to the statuses E2B uses', () => {
    expect(e2bStatus(new ProblemError('policy-violation'))).toBe(400);
    expect(e2bStatus(new ProblemError('quota-exceeded'))).toBe(429);
    expect(e2bStatus(new ProblemError('session-gone'))).toBe(404);
    expect(e2bStatus(new ProblemError('unauthorized'))).toBe(401);
  });
});

describe('list', () => {
  const all = [
    session('a', 'team-a', withMeta({ app: 'x y', n: '1' }, '2030-01-01T00:00:01Z')),
    session(
      'b',
      'team-a',
      withMeta({ app: 'x y' }, '2030-01-01T00:00:02Z'),
      (s) => void (s.spec.suspend = true),
    ),
    session('c', 'team-a', withMeta({ app: 'other' }, '2030-01-01T00:00:03Z')),
  ];

  it('decodes the metadata query as the SDKs encode it (each part encoded, then the whole)', () => {
    const sdk = new URLSearchParams({ [encodeURIComponent('app')]: encodeURIComponent('x y') }).toString();
    expect(metadataFilter(sdk)).toEqual([['app', 'x y']]);
  });

  it('filters by metadata and state, newest first by default', () => {
    const sdk = new URLSearchParams({ app: encodeURIComponent('x y') }).toString();
    expect(listPage(all, { metadata: sdk }, CREATED).items.map((i) => i.sandboxID)).toEqual([
      'b.team-a',
      'a.team-a',
    ]);
    expect(listPage(all, { state: 'paused' }, CREATED).items.map((i) => i.sandboxID)).toEqual(['b.team-a']);
    expect(listPage(all, { order: 'asc' }, CREATED).items.map((i) => i.sandboxID)).toEqual([
      'a.team-a',
      'b.team-a',
      'c.team-a',
    ]);
    expect(() => listPage(all, { state: 'gone' }, CREATED)).toThrow(/unknown state/);
  });

  it('pages with nextToken', () => {
    const first = listPage(all, { limit: 2 }, CREATED);
    expect(first.items.map((i) => i.sandboxID)).toEqual(['c.team-a', 'b.team-a']);
    const second = listPage(all, { limit: 2, nextToken: first.nextToken! }, CREATED);
    expect(second).toEqual({ items: [expect.objectContaining({ sandboxID: 'a.team-a' })] });
    expect(() => listPage(all, { nextToken: 'bm9wZQ' }, CREATED)).toThrow(/nextToken/);
  });
});
