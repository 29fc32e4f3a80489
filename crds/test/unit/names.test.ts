import { describe, expect, it } from '@jest/globals';

import { isDnsLabel, podName, secretName, sessionLabelValue, workspaceClaimName } from '../../src/names.js';

describe('child names', () => {
  it('prefixes short names', () => {
    expect(podName('demo')).toBe('sbs-demo');
    expect(secretName('demo')).toBe('sbs-demo-token');
    expect(sessionLabelValue('demo')).toBe('demo');
    expect(workspaceClaimName('demo')).toBe('sbs-demo-workspace');
  });

  it('keeps workspace claim names within the 253 characters of a DNS subdomain, never hashed', () => {
    const longest = 'c'.repeat(63);
    expect(workspaceClaimName(longest)).toBe(`sbs-${longest}-workspace`);
    expect(workspaceClaimName(longest).length).toBeLessThanOrEqual(253);
  });

  it('hashes pod names that would exceed 63 characters, distinctly for names sharing a prefix', () => {
    const a = 'a'.repeat(60) + 'xyz';
    const b = 'a'.repeat(60) + 'xyw';
    expect(podName(a).length).toBeLessThanOrEqual(63);
    expect(podName(a)).not.toBe(podName(b));
    expect(podName(a)).toMatch(/^sbs-a+-[0-9a-f]{8}$/);
    expect(isDnsLabel(podName(a))).toBe(true);
  });

  it('keeps names of exactly 59 characters unhashed', () => {
    const n = 'b'.repeat(59);
    expect(podName(n)).toBe('sbs-' + n);
  });

  it('validates DNS labels', () => {
    expect(isDnsLabel('ok-1')).toBe(true);
    for (const bad of ['', '-a', 'a-', 'A', 'a_b', 'a.b', 'x'.repeat(64)])
      expect(isDnsLabel(bad)).toBe(false);
  });
});
