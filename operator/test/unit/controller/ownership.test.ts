import { describe, expect, it } from '@jest/globals';

import { classifyChild, classifySecret } from '../../../src/controller/ownership.js';
import type { ChildMetadata } from '../../../src/kube/views.js';
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
  ])('foreign: %s', (_name, meta) => {
    expect(classifyChild(meta, session())).toBe('foreign');
  });
});

describe('classifySecret', () => {
  it('owned only with the matching session-uid annotation', () => {
    expect(classifySecret({ metadata: ref(), sessionUID: 'uid-1' }, session())).toBe('owned');
    expect(classifySecret({ metadata: ref(), sessionUID: 'uid-0' }, session())).toBe('tampered');
    expect(classifySecret({ metadata: ref(), sessionUID: undefined }, session())).toBe('tampered');
  });

  it('a previous session Secret is never owned, whatever its annotation', () => {
    expect(classifySecret({ metadata: ref({ uid: 'uid-0' }), sessionUID: 'uid-1' }, session())).toBe(
      'previous',
    );
  });
});
