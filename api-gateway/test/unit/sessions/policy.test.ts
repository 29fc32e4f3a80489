import { describe, expect, it } from '@jest/globals';

import type { SessionPolicy } from '../../../src/config.js';
import { buildSpec, checkPolicy, conflictingFields, imageAllowed } from '../../../src/sessions/policy.js';

const policy: SessionPolicy = {
  imageAllowlist: ['localhost/sandbox-platform/*', 'python:3.12'],
  defaultIdleTimeoutSeconds: 600,
  maxIdleTimeoutSeconds: 3600,
  maxLifetimeSeconds: 7200,
  allowedExecTransports: ['Agent'],
};

describe('session policy', () => {
  it('matches exact images and prefixes', () => {
    expect(imageAllowed('localhost/sandbox-platform/sandbox-agent:dev', policy.imageAllowlist)).toBe(true);
    expect(imageAllowed('python:3.12', policy.imageAllowlist)).toBe(true);
    expect(imageAllowed('python:3.12-slim', policy.imageAllowlist)).toBe(false);
    expect(imageAllowed('localhost/other/x', policy.imageAllowlist)).toBe(false);
    expect(imageAllowed('anything', [])).toBe(false);
  });

  it('accepts values at the bounds and refuses above them', () => {
    expect(() =>
      checkPolicy({ idleTimeoutSeconds: 3600, maxLifetimeSeconds: 7200, execTransport: 'Agent' }, policy),
    ).not.toThrow();
    expect(() => checkPolicy({ idleTimeoutSeconds: 3601 }, policy)).toThrow(/idleTimeoutSeconds/);
    expect(() => checkPolicy({ maxLifetimeSeconds: 7201 }, policy)).toThrow(/maxLifetimeSeconds/);
    expect(() => checkPolicy({ execTransport: 'KubernetesExec' }, policy)).toThrow(/execTransport/);
  });

  it('always bounds idle timeout and lifetime in the written spec', () => {
    expect(buildSpec({}, policy)).toEqual({ idleTimeoutSeconds: 600, maxLifetimeSeconds: 7200 });
  });

  it('compares only fields the caller asked for, with CRD defaults applied to the existing spec', () => {
    const existing = { idleTimeoutSeconds: 600, maxLifetimeSeconds: 7200, env: [{ name: 'A', value: '1' }] };
    expect(conflictingFields({}, existing)).toEqual([]);
    expect(
      conflictingFields({ execTransport: 'Agent', shutdownPolicy: 'Delete', env: { A: '1' } }, existing),
    ).toEqual([]);
    expect(conflictingFields({ idleTimeoutSeconds: 601, env: { A: '2' }, image: 'x' }, existing)).toEqual([
      'image',
      'idleTimeoutSeconds',
      'env',
    ]);
  });
});
