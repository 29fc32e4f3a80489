import {
  API_VERSION,
  KIND,
  POOL_KIND,
  controlledByPool,
  controlledBySession,
  isPlatformRef,
} from '../../src/index.js';

const session = { namespace: 'tenant-b', name: 'victim', uid: 'uid-b' };
const ref = { apiVersion: API_VERSION, kind: KIND, name: 'victim', uid: 'uid-b' };

describe('controlledBySession', () => {
  it('accepts the exact reference in the session namespace', () => {
    expect(controlledBySession('tenant-b', ref, session)).toBe(true);
  });

  it.each([
    ['another namespace (a Pod planted by another tenant)', 'tenant-a', ref],
    ['a bogus apiVersion', 'tenant-b', { ...ref, apiVersion: 'sandbox.dev/v0' }],
    ['another group', 'tenant-b', { ...ref, apiVersion: 'evil.dev/v1alpha1' }],
    ['no apiVersion', 'tenant-b', { kind: KIND, name: 'victim', uid: 'uid-b' }],
    ['another kind', 'tenant-b', { ...ref, kind: POOL_KIND }],
    ['another name', 'tenant-b', { ...ref, name: 'other' }],
    ['another UID', 'tenant-b', { ...ref, uid: 'uid-x' }],
    ['no reference', 'tenant-b', undefined],
  ])('refuses %s', (_what, namespace, r) => {
    expect(controlledBySession(namespace, r, session)).toBe(false);
  });

  it('refuses an owner without a UID', () => {
    expect(controlledBySession('tenant-b', { ...ref, uid: '' }, { ...session, uid: '' })).toBe(false);
  });
});

describe('controlledByPool', () => {
  const pool = { namespace: 'tenant-b', name: 'py', uid: 'uid-p' };
  it('accepts only the exact pool reference', () => {
    const p = { apiVersion: API_VERSION, kind: POOL_KIND, name: 'py', uid: 'uid-p' };
    expect(controlledByPool('tenant-b', p, pool)).toBe(true);
    expect(controlledByPool('tenant-a', p, pool)).toBe(false);
    expect(controlledByPool('tenant-b', { ...p, kind: KIND }, pool)).toBe(false);
    expect(controlledByPool('tenant-b', { ...p, apiVersion: 'sandbox.dev/v0' }, pool)).toBe(false);
  });
});

describe('isPlatformRef', () => {
  it('knows our kinds under served versions only', () => {
    expect(isPlatformRef(ref)).toBe(true);
    expect(isPlatformRef({ ...ref, apiVersion: 'sandbox.dev/v0' })).toBe(false);
    expect(isPlatformRef({ ...ref, kind: 'Deployment' })).toBe(false);
    expect(isPlatformRef(undefined)).toBe(false);
  });
});
