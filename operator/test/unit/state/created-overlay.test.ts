import { describe, expect, it } from '@jest/globals';

import { CreatedOverlay, TTL_MS } from '../../../src/state/created-overlay.js';

interface View {
  metadata: { uid: string; resourceVersion: string };
  label: string;
}
const view = (label: string, resourceVersion = '1', uid = 'u1'): View => ({
  metadata: { uid, resourceVersion },
  label,
});

describe('CreatedOverlay', () => {
  it('stands in for the informer until the informer has the object, then yields to it', () => {
    let now = 0;
    const o = new CreatedOverlay<View>(() => now);
    o.add('ns', 'a', view('created'));
    expect(o.get('ns', 'a', undefined)?.label).toBe('created');
    expect(o.get('ns', 'b', undefined)).toBeUndefined();
    now = 10;
    expect(o.get('ns', 'a', view('informer', '2'))?.label).toBe('informer');
    expect(o.size).toBe(0);
    // Once the informer had it, a later absence (deleted) is not masked.
    expect(o.get('ns', 'a', undefined)).toBeUndefined();
  });

  it('stands in for at most TTL_MS', () => {
    let now = 0;
    const o = new CreatedOverlay<View>(() => now);
    o.add('ns', 'a', view('created'));
    now = TTL_MS - 1;
    expect(o.get('ns', 'a', undefined)?.label).toBe('created');
    now = TTL_MS;
    expect(o.get('ns', 'a', undefined)).toBeUndefined();
    expect(o.size).toBe(0);
  });

  it('forgets an object deleted by us, and keeps namespaces apart', () => {
    const o = new CreatedOverlay<View>(() => 0);
    o.add('ns1', 'a', view('one'));
    o.add('ns2', 'a', view('two'));
    o.forget('ns1', 'a');
    expect(o.get('ns1', 'a', undefined)).toBeUndefined();
    expect(o.get('ns2', 'a', undefined)?.label).toBe('two');
  });

  it('recognizes the informer echo of our own create (same uid and resourceVersion) and nothing else', () => {
    const o = new CreatedOverlay<View>(() => 0);
    o.add('ns', 'a', view('created', '7', 'u1'));
    const meta = { namespace: 'ns', name: 'a', uid: 'u1', resourceVersion: '7' };
    expect(o.isEcho(meta)).toBe(true);
    expect(o.isEcho({ ...meta, resourceVersion: '8' })).toBe(false);
    expect(o.isEcho({ ...meta, uid: 'u2' })).toBe(false);
    expect(o.isEcho({ ...meta, name: 'b' })).toBe(false);
  });
});
