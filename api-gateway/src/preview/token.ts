/**
 * Preview tokens (ADR 0032): what a preview link carries and its cookie holds. A token names one
 * preview (namespace, session and its UID, port), the API key that made it (the port route's
 * upstream pool is that key's) and when it expires; it is `base64url(JSON).base64url(HMAC)`,
 * signed with a key derived from the master key, so every gateway replica checks it without
 * shared state and no new secret is needed. Tokens are not stored: a deleted session revokes its
 * tokens because its UID is gone (a session re-created with the same name has another UID).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Label of the signing key's derivation (never a `namespace/name/uid` of an agent token). */
export const PREVIEW_KEY_LABEL = 'sandbox.dev/preview-link/v1';
/** Longest token accepted (a real one is about 250 characters). */
export const MAX_TOKEN_LENGTH = 1024;

/** What a token says. */
export interface PreviewClaims {
  namespace: string;
  session: string;
  uid: string;
  port: number;
  /** Id of the API key that made the link (safe to log). */
  keyId: string;
  /** Expiry, Unix seconds. */
  exp: number;
}

/** Why a token was refused. */
export type TokenRefusal = 'malformed' | 'bad-signature' | 'expired';

const B64URL = /^[A-Za-z0-9_-]+$/;

/** Signs and checks preview tokens. */
export class PreviewTokens {
  private readonly key: Buffer;

  constructor(masterKey: Buffer) {
    if (masterKey.length < 32) throw new Error('PreviewTokens: the master key must be at least 32 bytes');
    this.key = createHmac('sha256', masterKey).update(PREVIEW_KEY_LABEL).digest();
  }

  /** A token for these claims. */
  sign(c: PreviewClaims): string {
    const payload = Buffer.from(
      JSON.stringify({ ns: c.namespace, s: c.session, u: c.uid, p: c.port, k: c.keyId, e: c.exp }),
    ).toString('base64url');
    return `${payload}.${this.mac(payload).toString('base64url')}`;
  }

  /** The claims of a genuine token that has not expired at `nowSeconds`, else why not. */
  verify(token: string, nowSeconds: number): { claims: PreviewClaims } | { refused: TokenRefusal } {
    if (token.length > MAX_TOKEN_LENGTH) return { refused: 'malformed' };
    const dot = token.indexOf('.');
    const payload = token.slice(0, dot);
    const sig = token.slice(dot + 1);
    if (dot < 1 || !B64URL.test(payload) || !B64URL.test(sig)) return { refused: 'malformed' };
    const given = Buffer.from(sig, 'base64url');
    const wanted = this.mac(payload);
    if (given.length !== wanted.length || !timingSafeEqual(given, wanted))
      return { refused: 'bad-signature' };
    const claims = parseClaims(Buffer.from(payload, 'base64url').toString('utf8'));
    if (!claims) return { refused: 'malformed' };
    if (claims.exp <= nowSeconds) return { refused: 'expired' };
    return { claims };
  }

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest();
  }
}

/** Claims from a signed payload's JSON (it was signed by us, but its shape is still checked). */
function parseClaims(text: string): PreviewClaims | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const strings = [o.ns, o.s, o.u, o.k].every((x) => typeof x === 'string' && x.length > 0);
  if (!strings || !Number.isInteger(o.p) || !Number.isInteger(o.e)) return undefined;
  return {
    namespace: o.ns as string,
    session: o.s as string,
    uid: o.u as string,
    port: o.p as number,
    keyId: o.k as string,
    exp: o.e as number,
  };
}
