import { describe, expect, it } from '@jest/globals';

import { classifyChild, classifySecret } from '../../../src/controller/ownership.js';
import type { ChildMetadata } from '../../../src/state/views.js';
import { session } from '../../fixtures/sessions.js';

const base: ChildMetadata = { name: 'sbs-demo', namespace: 'team-a', uid: 'c1', resourceVersion: '1' };
const ref = (over: Partial<NonNullable<ChildMetadata['controller']>> = {}): ChildMetadata => ({
  ...base,
  controller: {
    apiVersion: 'sandbox.dev/v1alpha1',
    kind: 'SandboxSession',
    name: 'demo',
    uid: 'uid-1',
    ...over,
  },
});

describe('classifyChild', () => {
  it('owned: controller ref to this session UID', () => {
    expect(classifyChild(ref(), session())).toBe('owned');
  });

  it('previous: a SandboxSession of the same name with another UID (deleted and re-created)', () => {
    expect(classifyChild(ref({ uid: 'uid-0' }), session())).toBe('previous');
  });

  it.each<[string, ChildMetadata]>([
    ['no controller', base],
    ['another kind', ref({ kind: 'ReplicaSet', apiVersion: 'apps/v1' })],
    ['another group', ref({ apiVersion: 'example.com/v1' })],
    ['another session name', ref({ name: 'other', uid: 'uid-9' })],
    // issue 25: a reference under a version we do not serve (the garbage collector cannot resolve
    // it, so the object never goes away by itself) naming this session's UID.
    [
      'our group under a version not served (sandbox.dev/v0), this UID',
      ref({ apiVersion: 'sandbox.dev/v0' }),
    ],
    ['no apiVersion at all, this UID', ref({ apiVersion: '' })],
    ['this session exactly, but in another namespace', { ...ref(), namespace: 'team-b' }],
    ['this UID under another name', ref({ name: 'other' })],
    ['the pool kind with this UID', ref({ kind: 'SandboxPool' })],
  ])('foreign: %s', (_name, meta) => {
    expect(classifyChild(meta, session())).toBe('foreign');
  });

  it.each<[string, ChildMetadata]>([
    ['an earlier UID under a version not served', ref({ uid: 'uid-0', apiVersion: 'sandbox.dev/v0' })],
    ['an earlier UID in another namespace', { ...ref({ uid: 'uid-0' }), namespace: 'team-b' }],
  ])('never previous (which would make the session wait for it): %s', (_name, meta) => {
    expect(classifyChild(meta, session())).toBe('foreign');
  });

  it('nothing is owned by a session without a UID or namespace', () => {
    const noUid = session((s) => {
      s.metadata.uid = undefined;
    });
    expect(classifyChild(ref({ uid: '' }), noUid)).not.toBe('owned');
    const noNamespace = session((s) => {
      s.metadata.namespace = undefined;
    });
    expect(classifyChild(ref(), noNamespace)).toBe('foreign');
  });
});

describe('classifySecret', () => {
  it('owned only with the matching session-uid annotation', () => {
    expect(classifySecret({ metadata: ref(), sessionUID: 'uid-1' }, session())).toBe('owned');
    expect(classifySecret({ metadata: ref(), sessionUID: 'uid-0' }, session())).toBe('tampered');
    expect(classifySecret({ metadata: ref(), sessionUID: undefined }, session())).toBe('tampered');
  });

  it('a Secret naming this session under a version not served, or in another namespace, is foreign', () => {
    expect(
      classifySecret({ metadata: ref({ apiVersion: 'sandbox.dev/v0' }), sessionUID: 'uid-1' }, session()),
    ).toBe('foreign');
    expect(
      classifySecret({ metadata: { ...ref(), namespace: 'team-b' }, sessionUID: 'uid-1' }, session()),
    ).toBe('foreign');
  });

  it('a previous session Secret is never owned, whatever its annotation', () => {
    expect(classifySecret({ metadata: ref({ uid: 'uid-0' }), sessionUID: 'uid-1' }, session())).toBe(
      'previous',
    );
  });
});
