/** Sandbox IDs, access tokens and the E2B key forms (ids.ts, access-token.ts, keys.ts). */
import { describe, expect, it } from '@jest/globals';
import { deriveToken } from '@sandbox-platform/api';

import type { KeyAuthenticator, Principal } from '../../../src/auth/keys.js';
import { AccessTokens, ACCESS_TOKEN_LABEL } from '../../../src/e2b/access-token.js';
import { parseSandboxId, sandboxId } from '../../../src/e2b/ids.js';
import { decodeHexKey, E2bKeyAuthenticator, TICKET_PREFIX } from '../../../src/e2b/keys.js';

const MASTER = Buffer.alloc(32, 3);
const A: Principal = { keyId: 'a', namespaces: new Set(['team-a']), defaultNamespace: 'team-a' };
const inner: KeyAuthenticator = {
  authenticate: (k) => (k === 'the-plain-key-of-team-a-000' ? A : undefined),
};

describe('sandbox IDs', () => {
  it('are <name>.<namespace> and parse back', () => {
    const id = sandboxId({ namespace: 'team-a', name: 'sbx-1' });
    expect(id).toBe('sbx-1.team-a');
    expect(parseSandboxId(id)).toEqual({ namespace: 'team-a', name: 'sbx-1' });
  });

  it.each(['', 'nodot', 'a.b.c', 'A.b', 'a.', '.b', 'a.b/c', '-a.b', `${'x'.repeat(64)}.b`, undefined])(
    'refuse %p',
    (id) => expect(parseSandboxId(id)).toBeUndefined(),
  );
});

describe('access tokens', () => {
  const tokens = new AccessTokens(MASTER);
  const s = { namespace: 'team-a', name: 'sbx-1', uid: 'uid-1' };

  it('are derived, stable, and bound to namespace, name and uid', () => {
    const t = tokens.token(s);
    expect(t).toMatch(/^[0-9a-f]{64}$/);
    expect(new AccessTokens(MASTER).token(s)).toBe(t);
    expect(tokens.token({ ...s, uid: 'uid-2' })).not.toBe(t);
    expect(tokens.token({ ...s, name: 'sbx-2' })).not.toBe(t);
    expect(tokens.token({ ...s, namespace: 'team-b' })).not.toBe(t);
    expect(new AccessTokens(Buffer.alloc(32, 4)).token(s)).not.toBe(t);
  });

  it('SECURITY: differ from the agent token of the same session (their own label)', () => {
    expect(ACCESS_TOKEN_LABEL).toBe('sandbox.dev/e2b-access-token/v1');
    expect(tokens.token(s)).not.toBe(deriveToken(MASTER, s));
  });

  it("verify only the session's own token", () => {
    expect(tokens.verify(s, tokens.token(s))).toBe(true);
    expect(tokens.verify(s, tokens.token({ ...s, uid: 'uid-2' }))).toBe(false);
    expect(tokens.verify(s, '')).toBe(false);
    expect(tokens.verify(s, deriveToken(MASTER, s))).toBe(false);
  });

  it('refuse short master keys and sessions without a uid', () => {
    expect(() => new AccessTokens(Buffer.alloc(16))).toThrow(/at least 32 bytes/);
    expect(() => tokens.token({ ...s, uid: '' })).toThrow(/UID/);
  });
});

describe('E2B key forms', () => {
  it('decode e2b_ + the hex of a UTF-8 key', () => {
    expect(decodeHexKey(`e2b_${Buffer.from('héllo key').toString('hex')}`)).toBe('héllo key');
    expect(decodeHexKey('e2b_zz')).toBeUndefined();
    expect(decodeHexKey('e2b_abc')).toBeUndefined(); // odd length
    expect(decodeHexKey('e2b_ff')).toBeUndefined(); // not UTF-8
    expect(decodeHexKey('plain')).toBeUndefined();
  });

  it('authenticate the plain key and its e2b_ form, nothing else', () => {
    const keys = new E2bKeyAuthenticator(inner);
    expect(keys.authenticate('the-plain-key-of-team-a-000')).toBe(A);
    expect(keys.authenticate(`e2b_${Buffer.from('the-plain-key-of-team-a-000').toString('hex')}`)).toBe(A);
    expect(keys.authenticate(`e2b_${Buffer.from('another key').toString('hex')}`)).toBeUndefined();
  });

  it('SECURITY: a ticket authenticates once, only when issued here; released tickets are gone', () => {
    const keys = new E2bKeyAuthenticator(inner);
    const { credential } = keys.issue(A);
    expect(credential.startsWith(TICKET_PREFIX)).toBe(true);
    expect(keys.authenticate(credential)).toBe(A);
    expect(keys.authenticate(credential)).toBeUndefined();
    expect(keys.authenticate(`${TICKET_PREFIX}${'0'.repeat(64)}`)).toBeUndefined();
    const second = keys.issue(A);
    second.release();
    expect(keys.authenticate(second.credential)).toBeUndefined();
    expect(keys.outstanding).toBe(0);
  });
});
