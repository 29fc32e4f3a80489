/**
 * The proxy Service's address for sandbox Pods' DNS: resolved once at start, retried while the
 * name does not resolve yet, and a clear error (the operator exits) when it never does.
 */
import { describe, expect, it } from '@jest/globals';

import { resolveEgressDnsServer } from '../../../src/runtime/egress-dns.js';

const URL_ = 'http://rel-sandbox-platform-egress-proxy.sandbox-system.svc:3128';

describe('resolveEgressDnsServer', () => {
  it("resolves the proxy URL's host, retrying until it resolves", async () => {
    const asked: string[] = [];
    const retries: number[] = [];
    const ip = await resolveEgressDnsServer(URL_, {
      intervalMs: 1,
      lookup: (host) => {
        asked.push(host);
        if (asked.length < 3)
          return Promise.reject(Object.assign(new Error('not yet'), { code: 'ENOTFOUND' }));
        return Promise.resolve({ address: '10.96.0.53' });
      },
      onRetry: (attempt) => retries.push(attempt),
    });
    expect(ip).toBe('10.96.0.53');
    expect(asked).toEqual(Array(3).fill('rel-sandbox-platform-egress-proxy.sandbox-system.svc'));
    expect(retries).toEqual([1, 2]);
  });

  it('takes an IPv4 host as given', async () => {
    expect(
      await resolveEgressDnsServer('http://10.96.0.9:3128', {
        lookup: () => Promise.reject(new Error('no')),
      }),
    ).toBe('10.96.0.9');
  });

  it('fails naming the host after the last attempt', async () => {
    await expect(
      resolveEgressDnsServer(URL_, {
        attempts: 2,
        intervalMs: 1,
        lookup: () => Promise.reject(new Error('ENOTFOUND')),
      }),
    ).rejects.toThrow(/cannot resolve the egress proxy rel-sandbox-platform-egress-proxy.sandbox-system.svc/);
  });
});
