import { describe, expect, it } from '@jest/globals';

import { compareQuantities, parseQuantity, pickQuantity } from '../../../src/resources/quantity.js';

const cmp = (a: string | number, b: string | number): number => {
  const qa = parseQuantity(a);
  const qb = parseQuantity(b);
  if (!qa || !qb) throw new Error(`unparsed ${a} or ${b}`);
  return compareQuantities(qa, qb);
};

describe('parseQuantity / compareQuantities', () => {
  it.each<[string | number, string | number]>([
    ['100m', '0.1'],
    ['1', '1000m'],
    ['1.0', '1'],
    ['1Gi', '1073741824'],
    ['1Ki', '1024'],
    ['1k', '1000'],
    ['1M', '1e6'],
    ['1E3', '1k'],
    ['1e-3', '1m'],
    ['1500m', 1.5],
    ['.5', '500m'],
    ['5.', '5'],
    ['1000n', '1u'],
    ['1Ei', '1152921504606846976'],
    [2, '2'],
    ['+1', '1'],
  ])('%s equals %s', (a, b) => {
    expect(cmp(a, b)).toBe(0);
  });

  it.each<[string, string]>([
    ['1G', '1Gi'],
    ['999m', '1'],
    ['128Mi', '256Mi'],
    ['1m', '1'],
    ['-1', '0'],
    ['1n', '1u'],
    ['1Mi', '1.1M'],
  ])('%s is less than %s', (a, b) => {
    expect(cmp(a, b)).toBe(-1);
    expect(cmp(b, a)).toBe(1);
  });

  it.each<[string | number]>([
    [''],
    ['abc'],
    ['1KiB'],
    ['1 Gi'],
    ['1.2.3'],
    ['1e'],
    ['Gi'],
    ['1e100000'],
    [Number.NaN],
    [Number.POSITIVE_INFINITY],
    ['9'.repeat(200)],
  ])('refuses %s', (value) => {
    expect(parseQuantity(value)).toBeUndefined();
  });
});

describe('pickQuantity', () => {
  it('returns the larger or smaller text as given, the first on a tie, undefined when unparsed', () => {
    expect(pickQuantity('max', '1', '1500m')).toBe('1500m');
    expect(pickQuantity('max', '1', '1000m')).toBe('1');
    expect(pickQuantity('min', '256Mi', '128Mi')).toBe('128Mi');
    expect(pickQuantity('min', '256Mi', '1Gi')).toBe('256Mi');
    expect(pickQuantity('max', '1', 'lots')).toBeUndefined();
  });
});
