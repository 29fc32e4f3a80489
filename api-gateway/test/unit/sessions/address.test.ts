import { describe, expect, it } from '@jest/globals';

import { dialable } from '../../../src/sessions/address.js';

const strict = { allowLoopback: false };
const tests = { allowLoopback: true };

describe('dialable pod addresses', () => {
  it.each(['10.244.1.7', '198.18.3.4', '192.168.0.10', 'fd00::7', '2001:db8::1'])(
    'dials the unicast address %s',
    (ip) => {
      expect(dialable(ip, strict)).toBe(true);
    },
  );

  it.each([
    '169.254.169.254',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    'fe80::1',
    '::',
    'ff02::1',
    'metadata.google.internal',
    '10.0.0.1:80',
  ])('never dials %s', (ip) => {
    expect(dialable(ip, strict)).toBe(false);
    expect(dialable(ip, tests)).toBe(false);
  });

  it('dials loopback only when the configuration allows it (tests)', () => {
    expect([dialable('127.0.0.2', strict), dialable('::1', strict)]).toEqual([false, false]);
    expect([dialable('127.0.0.2', tests), dialable('::1', tests)]).toEqual([true, true]);
  });
});

describe('dialable answers, remembered per setting', () => {
  it('gives the same answer again and keeps the loopback settings apart', () => {
    for (let i = 0; i < 3; i++) {
      expect(dialable('127.0.0.9', strict)).toBe(false);
      expect(dialable('127.0.0.9', tests)).toBe(true);
      expect(dialable('169.254.169.254', tests)).toBe(false);
    }
  });
});
