import { describe, expect, it } from '@jest/globals';

import type { SessionPolicy } from '../../../src/config.js';
import { parseImageAllowlist, parseImageRef } from '../../../src/sessions/image-allowlist.js';
import { buildSpec, checkPolicy, conflictingFields, imageAllowed } from '../../../src/sessions/policy.js';

const policy: SessionPolicy = {
  imageAllowlist: parseImageAllowlist(['localhost/sandbox-platform/*', 'python:3.12']),
  maxEnvBytes: 100,
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
    expect(imageAllowed('anything', parseImageAllowlist([]))).toBe(false);
  });

  describe('image allowlist entries match whole segments (regression: prefixes admitted look-alikes)', () => {
    const list = parseImageAllowlist([
      'registry.example.com/sandbox',
      'registry.example.com/team/*',
      'localhost:5000/tools/python:3.12',
      'ghcr.io/org/pinned@sha256:' + 'a'.repeat(64),
    ]);
    it.each([
      ['registry.example.com/sandbox', true],
      ['registry.example.com/sandbox:1.0', true],
      ['registry.example.com/sandbox@sha256:' + 'b'.repeat(64), true],
      ['registry.example.com/sandboxevil', false],
      ['registry.example.com/sandbox-evil:1.0', false],
      ['registry.example.com/sandbox/nested', false],
      ['registry.example.com/team/a', true],
      ['registry.example.com/team/a/b:c', true],
      ['registry.example.com/team', false],
      ['registry.example.com/teamevil/a', false],
      ['registry.example.com/team/../evil', false],
      ['localhost:5000/tools/python:3.12', true],
      ['localhost:5000/tools/python:3.12-slim', false],
      ['localhost:5000/tools/python', false],
      ['ghcr.io/org/pinned@sha256:' + 'a'.repeat(64), true],
      ['ghcr.io/org/pinned:latest', false],
      ['REGISTRY.example.com/team/A', false],
      ['registry.example.com/team/a b', false],
    ])('%s -> %s', (image, allowed) => {
      expect(imageAllowed(image, list)).toBe(allowed);
    });

    it.each(['registry/sandbox*', '*', 'registry/*/x', 'registry/team/*/*', 'Upper/Case', 'a//b', ''])(
      'refuses the entry "%s" (fail fast at start)',
      (entry) => {
        expect(() => parseImageAllowlist([entry])).toThrow(/not an allowlist entry/);
      },
    );

    it('splits a registry port from a tag', () => {
      expect(parseImageRef('localhost:5000/a/b')).toEqual({ repository: 'localhost:5000/a/b' });
      expect(parseImageRef('localhost:5000/a/b:t')).toEqual({ repository: 'localhost:5000/a/b', tag: 't' });
    });
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
