/**
 * The bind key (docs/adr/0016): derived from the master key, the same on every replica, and a
 * signature that holds only for the exact payload and the exact key.
 */
import { randomBytes } from 'node:crypto';

import { describe, expect, it } from '@jest/globals';

import { bindSigner, bindVerifyKey, verifyBindSignature } from '../../src/bind.js';
import type { BindPayload } from '../../src/wire/generated/types.js';

const master = Buffer.alloc(32, 7);
const payload: BindPayload = {
  version: 1,
  pod: { namespace: 'team-a', name: 'warm-abcdefghij', uid: 'pod-uid' },
  session: { namespace: 'team-a', name: 'demo', uid: 'session-uid' },
  token: 'a'.repeat(64),
};

describe('bindSigner', () => {
  it('derives the same key pair from the same master key, another from another', () => {
    expect(bindSigner(master).publicKeyHex).toBe(bindSigner(Buffer.from(master)).publicKeyHex);
    expect(bindSigner(Buffer.alloc(32, 8)).publicKeyHex).not.toBe(bindSigner(master).publicKeyHex);
    expect(bindSigner(master).publicKeyHex).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a short master key', () => {
    expect(() => bindSigner(Buffer.alloc(31))).toThrow(/at least 32 bytes/);
  });

  it('signs the payload as JSON text that the public key verifies', () => {
    const signer = bindSigner(master);
    const request = signer.sign(payload);
    expect(JSON.parse(request.payload)).toEqual(payload);
    expect(request.signature).toMatch(/^[A-Za-z0-9+/]{86}==$/);
    expect(verifyBindSignature(bindVerifyKey(signer.publicKeyHex), request)).toBe(true);
  });
});

describe('verifyBindSignature', () => {
  const signer = bindSigner(master);
  const key = bindVerifyKey(signer.publicKeyHex);
  const request = signer.sign(payload);

  it('refuses a payload changed after signing (another token, another pod)', () => {
    const otherToken = request.payload.replace('a'.repeat(64), 'b'.repeat(64));
    expect(verifyBindSignature(key, { ...request, payload: otherToken })).toBe(false);
    const otherPod = request.payload.replace('warm-abcdefghij', 'warm-zzzzzzzzzz');
    expect(verifyBindSignature(key, { ...request, payload: otherPod })).toBe(false);
  });

  it('refuses a signature made with any other key (a forged bind)', () => {
    const forged = bindSigner(randomBytes(32)).sign(payload);
    expect(verifyBindSignature(key, forged)).toBe(false);
  });

  it('refuses a signature of the wrong length without throwing', () => {
    expect(verifyBindSignature(key, { ...request, signature: 'AAAA' })).toBe(false);
  });
});

describe('bindVerifyKey', () => {
  it('refuses anything but 64 lowercase hex characters', () => {
    expect(() => bindVerifyKey('abc')).toThrow(/64 lowercase hex/);
    expect(() => bindVerifyKey('A'.repeat(64))).toThrow(/64 lowercase hex/);
  });
});
