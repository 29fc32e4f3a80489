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

  it('takes env, secretEnv and startupCommand with a pool (the bind carries them), not image (ADR 0016)', () => {
    const o = {
      pool: 'warm',
      env: { A: '1' },
      secretEnv: { C: { secret: 'api', key: 'token' } },
      startupCommand: 'serve',
    };
    expect(() => checkPolicy(o, policy)).not.toThrow();
    expect(buildSpec(o, policy)).toMatchObject({
      poolRef: { name: 'warm' },
      env: [
        { name: 'A', value: '1' },
        { name: 'C', valueFrom: { secretKeyRef: { name: 'api', key: 'token' } } },
      ],
      startup: { command: 'serve' },
    });
    expect(() => checkPolicy({ pool: 'warm', image: 'x' }, policy)).toThrow(/image cannot be given with it/);
  });

  it('refuses a name in both env and secretEnv, more than 64 variables, and startup without the agent', () => {
    const ref = { secret: 'api', key: 'token' };
    expect(() => checkPolicy({ env: { A: '1' }, secretEnv: { A: ref } }, policy)).toThrow(/both name A/);
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, ref]));
    expect(() => checkPolicy({ secretEnv: many }, policy)).toThrow(/65 variables; at most 64/);
    expect(() => checkPolicy({ startupCommand: 'x', execTransport: 'KubernetesExec' }, policy)).toThrow(
      /needs the Agent transport/,
    );
  });

  it('compares secretEnv and startupCommand with the existing spec', () => {
    const existing = {
      env: [
        { name: 'A', value: '1' },
        { name: 'C', valueFrom: { secretKeyRef: { name: 'api', key: 'token' } } },
      ],
      startup: { command: 'serve' },
    };
    const same = {
      env: { A: '1' },
      secretEnv: { C: { secret: 'api', key: 'token' } },
      startupCommand: 'serve',
    };
    expect(conflictingFields(same, existing)).toEqual([]);
    expect(
      conflictingFields({ secretEnv: { C: { secret: 'api', key: 'other' } }, startupCommand: 'x' }, existing),
    ).toEqual(['secretEnv', 'startupCommand']);
  });
});
