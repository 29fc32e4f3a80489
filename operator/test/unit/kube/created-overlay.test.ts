import { describe, expect, it } from '@jest/globals';

import { CreatedOverlay, TTL_MS } from '../../../src/kube/created-overlay.js';

describe('CreatedOverlay', () => {
  it('stands in for the informer until the informer has the object, then yields to it', () => {
    let now = 0;
    const o = new CreatedOverlay<string>(() => now);
    o.add('ns', 'a', 'created');
    expect(o.get('ns', 'a', undefined)).toBe('created');
    expect(o.get('ns', 'b', undefined)).toBeUndefined();
    now = 10;
    expect(o.get('ns', 'a', 'informer')).toBe('informer');
    expect(o.size).toBe(0);
    // Once the informer had it, a later absence (deleted) is not masked.
    expect(o.get('ns', 'a', undefined)).toBeUndefined();
  });

  it('stands in for at most TTL_MS', () => {
    let now = 0;
    const o = new CreatedOverlay<string>(() => now);
    o.add('ns', 'a', 'created');
    now = TTL_MS - 1;
    expect(o.get('ns', 'a', undefined)).toBe('created');
    now = TTL_MS;
    expect(o.get('ns', 'a', undefined)).toBeUndefined();
    expect(o.size).toBe(0);
  });

  it('forgets an object deleted by us, and keeps namespaces apart', () => {
    const o = new CreatedOverlay<string>(() => 0);
    o.add('ns1', 'a', 'one');
    o.add('ns2', 'a', 'two');
    o.forget('ns1', 'a');
    expect(o.get('ns1', 'a', undefined)).toBeUndefined();
    expect(o.get('ns2', 'a', undefined)).toBe('two');
  });
});
