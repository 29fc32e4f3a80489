import { describe, expect, it } from '@jest/globals';

import type { SessionPolicy } from '../../../src/config.js';
import { buildSpec, checkPolicy, conflictingFields } from '../../../src/sessions/policy.js';

const policy: SessionPolicy = {
  maxEnvBytes: 100,
  defaultIdleTimeoutSeconds: 600,
  maxIdleTimeoutSeconds: 3600,
  maxLifetimeSeconds: 7200,
  allowedExecTransports: ['Agent'],
};

describe('session policy', () => {
  it('leaves the image to the admission policy: any image passes the gateway (ADR 0028)', () => {
    expect(() => checkPolicy({ image: 'registry.invalid/miner/xmrig:latest' }, policy)).not.toThrow();
    expect(buildSpec({ image: 'registry.invalid/miner/xmrig:latest' }, policy).image).toBe(
      'registry.invalid/miner/xmrig:latest',
    );
  });

  it('refuses a session env over the total size (names and values, UTF-8 bytes)', () => {
    expect(() => checkPolicy({ env: { A: 'x'.repeat(99) } }, policy)).not.toThrow();
    expect(() => checkPolicy({ env: { A: 'x'.repeat(100) } }, policy)).toThrow(/101 bytes.*limit is 100/);
    expect(() => checkPolicy({ env: { A: 'é'.repeat(50) } }, policy)).toThrow(/101 bytes/);
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
