/**
 * ownerKey: which session an event about a child wakes. Waking is harmless (the reconcile judges
 * the object exactly before using it), but the key must always be in the child's own namespace,
 * so an object planted in one namespace can never even wake a session of another (ADR 0027).
 */
import { describe, expect, it } from '@jest/globals';

import { ownerKey } from '../../../src/state/owner-key.js';
import type { ChildMetadata } from '../../../src/state/views.js';

const meta = (over: Partial<ChildMetadata> = {}): ChildMetadata => ({
  name: 'sbs-demo',
  namespace: 'team-a',
  uid: 'c1',
  resourceVersion: '1',
  ...over,
});
const ref = { apiVersion: 'sandbox.dev/v1alpha1', kind: 'SandboxSession', name: 'demo', uid: 'uid-1' };

describe('ownerKey', () => {
  it('maps a session controller reference to the session of that name in the child namespace', () => {
    expect(ownerKey(meta({ controller: ref }))).toBe('team-a/demo');
  });

  it('keeps the key in the child namespace whatever session the reference names (a planted Pod)', () => {
    expect(
      ownerKey(meta({ namespace: 'tenant-a', controller: { ...ref, name: 'victim', uid: 'uid-b' } })),
    ).toBe('tenant-a/victim');
  });

  it('ignores a reference under a version not served, falling back to the session label', () => {
    const bogus = { ...ref, apiVersion: 'sandbox.dev/v0', name: 'other' };
    expect(ownerKey(meta({ controller: bogus, sessionLabel: 'demo' }))).toBe('team-a/demo');
    expect(ownerKey(meta({ controller: bogus }))).toBeUndefined();
  });

  it('ignores a pool reference, and an object with neither reference nor label', () => {
    expect(ownerKey(meta({ controller: { ...ref, kind: 'SandboxPool', name: 'py' } }))).toBeUndefined();
    expect(ownerKey(meta())).toBeUndefined();
  });
});
