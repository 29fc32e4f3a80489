import { describe, expect, it } from '@jest/globals';
import type { SandboxSession } from '@sandbox-platform/api';

import { SessionCache } from '../../../src/state/session-cache.js';
import { activeAt, named, session, uid, withStatus, type SessionMod } from '../../fixtures/sessions.js';

const KEY = 'team-a/demo';

const version =
  (rv: string): SessionMod =>
  (s) => {
    s.metadata.resourceVersion = rv;
  };

const phase = (p: string): SessionMod => withStatus({ phase: p as 'Pending' });

describe('SessionCache', () => {
  it('serves a copy of what the watch delivered, keeping only what the reconcile reads', () => {
    const cache = new SessionCache();
    const s = session(version('5'), activeAt('2030-01-01T00:00:05Z'));
    s.metadata.annotations!['kubectl.kubernetes.io/last-applied-configuration'] = '{"big":"json"}';
    (s.metadata as Record<string, unknown>)['managedFields'] = [{ manager: 'kubectl' }];
    cache.observe(s);
    const got = cache.get(KEY)!;
    expect(got.metadata).toEqual({
      name: 'demo',
      namespace: 'team-a',
      uid: 'uid-1',
      resourceVersion: '5',
      generation: 1,
      creationTimestamp: '2030-01-01T00:00:00Z',
      annotations: { 'sandbox.dev/last-activity': '2030-01-01T00:00:05Z' },
    });
    expect(got.spec).toEqual(s.spec);
    got.metadata.name = 'changed';
    expect(cache.get(KEY)?.metadata.name).toBe('demo');
    expect(cache.get('team-a/other')).toBeUndefined();
  });

  it('keeps the newest version: an older event never replaces a newer entry', () => {
    const cache = new SessionCache();
    cache.observe(session(version('10'), phase('Ready')));
    cache.observe(session(version('9'), phase('Pending')));
    expect(cache.get(KEY)?.status?.phase).toBe('Ready');
    cache.observe(session(version('11'), phase('Terminated')));
    expect(cache.get(KEY)?.status?.phase).toBe('Terminated');
  });

  it('replaces the entry of an earlier session of the same name whatever the versions', () => {
    const cache = new SessionCache();
    cache.observe(session(version('10')));
    cache.observe(session(version('3'), uid('uid-2')));
    expect(cache.get(KEY)?.metadata.uid).toBe('uid-2');
  });

  it('forgets deleted sessions', () => {
    const cache = new SessionCache();
    cache.observe(session(version('10')));
    cache.forget(KEY);
    expect(cache.get(KEY)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("writes the answer of the operator's own write through, but never inserts or crosses sessions", () => {
    const cache = new SessionCache();
    cache.written(session(version('12')));
    expect(cache.get(KEY)).toBeUndefined();
    cache.observe(session(version('10'), phase('Pending')));
    cache.written(session(version('12'), phase('Ready')));
    expect(cache.get(KEY)?.status?.phase).toBe('Ready');
    cache.written(session(version('13'), uid('uid-2'), phase('Failed')));
    expect(cache.get(KEY)?.metadata.uid).toBe('uid-1');
    cache.observe(session(version('11'), phase('Pending')));
    expect(cache.get(KEY)?.status?.phase).toBe('Ready');
  });

  it('holds an entry back after a refused write until the watch brings a newer version', () => {
    const cache = new SessionCache();
    cache.observe(session(version('10')));
    cache.invalidate(KEY);
    expect(cache.get(KEY)).toBeUndefined();
    cache.observe(session(version('10')));
    expect(cache.get(KEY)).toBeUndefined();
    cache.observe(session(version('14')));
    expect(cache.get(KEY)?.metadata.resourceVersion).toBe('14');
  });

  it('never serves an entry whose resourceVersion is not an integer', () => {
    const cache = new SessionCache();
    cache.observe(session(version('abc')));
    expect(cache.get(KEY)).toBeUndefined();
  });

  it('prune drops what a LIST no longer shows, unless the watch delivered it after the LIST', () => {
    const cache = new SessionCache();
    const at = (name: string, ns: string, rv: string): SandboxSession => {
      const s = session(named(name), version(rv));
      s.metadata.namespace = ns;
      return s;
    };
    cache.observe(at('listed', 'team-a', '5'));
    cache.observe(at('vanished', 'team-a', '6'));
    cache.observe(at('newer', 'team-a', '30'));
    cache.observe(at('elsewhere', 'team-b', '7'));
    expect(cache.prune('team-a', new Set(['team-a/listed']), '20')).toBe(1);
    expect(cache.get('team-a/listed')).toBeDefined();
    expect(cache.get('team-a/vanished')).toBeUndefined();
    expect(cache.get('team-a/newer')).toBeDefined();
    expect(cache.get('team-b/elsewhere')).toBeDefined();
    expect(cache.prune('', new Set(['team-a/listed']), '40')).toBe(2);
    expect(cache.size).toBe(1);
  });
});
