/** Preview hosts, tokens and cookies: the pure parts of browser previews (ADR 0032). */
import { describe, expect, it } from '@jest/globals';

import { cookieName, cookieValues, setCookie, withoutCookie } from '../../../src/preview/cookie.js';
import { classifyHost, labelFor, parseLabel, previewOrigin } from '../../../src/preview/host.js';
import { PreviewTokens } from '../../../src/preview/token.js';

const claims = { namespace: 'team-a', session: 'demo', uid: 'u-1', port: 8000, keyId: 'a', exp: 2_000 };

describe('preview hosts', () => {
  it('reads back the label it makes', () => {
    const made = labelFor({ port: 8000, session: 'my-app', namespace: 'team-a' });
    expect(made).toEqual({ label: '8000-my-app--team-a' });
    expect(parseLabel('8000-my-app--team-a')).toEqual({ port: 8000, session: 'my-app', namespace: 'team-a' });
  });

  it('refuses ambiguous and too long labels when a link is made', () => {
    expect(labelFor({ port: 1, session: 'a--b', namespace: 'c' })).toHaveProperty('error');
    expect(labelFor({ port: 8000, session: 'x'.repeat(40), namespace: 'y'.repeat(20) })).toHaveProperty(
      'error',
    );
  });

  it('reads no address from labels that are not previews', () => {
    for (const label of [
      '8000',
      '8000-a',
      '0-a--b',
      '65536-a--b',
      '08000-a--b',
      'x-a--b',
      '8000-a--',
      '8000--a--b',
      '8000-A--b',
    ]) {
      expect(parseLabel(label)).toBeUndefined();
    }
  });

  it('classifies every host under the preview domain as a preview, invalid unless one label names one', () => {
    const d = 'preview.test';
    expect(classifyHost('8000-demo--team-a.preview.test:8080', d)).toEqual({
      kind: 'preview',
      address: { port: 8000, session: 'demo', namespace: 'team-a' },
    });
    expect(classifyHost('8000-DEMO--team-a.Preview.Test', d)).toMatchObject({ kind: 'preview' });
    expect(classifyHost('console.preview.test', d)).toEqual({
      kind: 'invalid',
      host: 'console.preview.test',
    });
    expect(classifyHost('a.8000-demo--team-a.preview.test', d)).toMatchObject({ kind: 'invalid' });
    for (const other of ['preview.test', 'xpreview.test', '10.0.0.1:80', 'gateway.example.com', undefined]) {
      expect(classifyHost(other, d)).toEqual({ kind: 'other' });
    }
  });

  it('writes the port into the origin only when it is not the scheme default', () => {
    const o = { domain: 'p.test', scheme: 'https' as const };
    expect(previewOrigin('8000-a--b', { ...o, port: 0 })).toBe('https://8000-a--b.p.test');
    expect(previewOrigin('8000-a--b', { ...o, port: 443 })).toBe('https://8000-a--b.p.test');
    expect(previewOrigin('8000-a--b', { ...o, port: 8443 })).toBe('https://8000-a--b.p.test:8443');
  });
});

describe('preview tokens', () => {
  const tokens = new PreviewTokens(Buffer.alloc(32, 1));

  it('verifies its own tokens until they expire', () => {
    const t = tokens.sign(claims);
    expect(tokens.verify(t, 1_999)).toEqual({ claims });
    expect(tokens.verify(t, 2_000)).toEqual({ refused: 'expired' });
  });

  it('SECURITY: refuses a token with a changed payload, another key or garbage', () => {
    const t = tokens.sign(claims);
    const [payload, sig] = t.split('.') as [string, string];
    const forged = Buffer.from(
      JSON.stringify({ ns: 'team-b', s: 'demo', u: 'u-1', p: 8000, k: 'a', e: 2_000 }),
    ).toString('base64url');
    expect(tokens.verify(`${forged}.${sig}`, 0)).toEqual({ refused: 'bad-signature' });
    expect(new PreviewTokens(Buffer.alloc(32, 2)).verify(t, 0)).toEqual({ refused: 'bad-signature' });
    for (const bad of [
      '',
      '.',
      `${payload}.`,
      `.${sig}`,
      `${payload}.${sig}.x`,
      'a'.repeat(2000),
      `${payload}!.${sig}`,
    ]) {
      expect(tokens.verify(bad, 0)).toHaveProperty('refused');
    }
  });

  it('refuses a short master key', () => {
    expect(() => new PreviewTokens(Buffer.alloc(16))).toThrow(/at least 32 bytes/);
  });
});

describe('preview cookie', () => {
  it('is host-only, HttpOnly, SameSite=Lax, and Secure with the __Host- prefix over https', () => {
    expect(setCookie('t', { scheme: 'https', maxAgeSeconds: 60.7 })).toBe(
      '__Host-sandbox-preview=t; Path=/; Max-Age=60; HttpOnly; SameSite=Lax; Secure',
    );
    expect(setCookie('t', { scheme: 'http', maxAgeSeconds: 5 })).toBe(
      'sandbox-preview=t; Path=/; Max-Age=5; HttpOnly; SameSite=Lax',
    );
    expect(setCookie('t', { scheme: 'http', maxAgeSeconds: 60 })).not.toMatch(/domain/i);
  });

  it('reads every value of its name and removes them from what is forwarded', () => {
    const name = cookieName('http');
    const header = 'a=1; sandbox-preview=x; b=2;sandbox-preview=y';
    expect(cookieValues(header, name)).toEqual(['x', 'y']);
    expect(withoutCookie(header, name)).toBe('a=1; b=2');
    expect(withoutCookie('sandbox-preview=x', name)).toBeUndefined();
    expect(cookieValues(undefined, name)).toEqual([]);
  });
});
