/**
 * E2B access tokens (`envdAccessToken`, sent by the SDKs as `X-Access-Token` on every envd call).
 * One per session, derived like the agent token and never stored:
 *
 *   key   = HMAC-SHA256(masterKey, "sandbox.dev/e2b-access-token/v1")
 *   token = hex(HMAC-SHA256(key, "<namespace>/<name>/<uid>"))
 *
 * The label makes it a different secret from the session's agent token (HMAC of the master key
 * over the same subject, crds/src/token.ts): handing it to an SDK client gives no access to the
 * agent itself. The UID binds it to one incarnation: a session re-created with the same name gets
 * another token, and a token is good for the one session it was derived for only.
 */
import { createHmac } from 'node:crypto';

import { MIN_MASTER_KEY_BYTES, safeEqual, type TokenSubject } from '@sandbox-platform/api';

/** The derivation label (changing it invalidates every access token handed out). */
export const ACCESS_TOKEN_LABEL = 'sandbox.dev/e2b-access-token/v1';

/** Derives and checks access tokens. */
export class AccessTokens {
  private readonly key: Buffer;

  constructor(masterKey: Buffer) {
    if (masterKey.length < MIN_MASTER_KEY_BYTES) {
      throw new Error(`master key must be at least ${MIN_MASTER_KEY_BYTES} bytes`);
    }
    this.key = createHmac('sha256', masterKey).update(ACCESS_TOKEN_LABEL).digest();
  }

  /** The access token of one session. */
  token(subject: TokenSubject): string {
    if (!subject.uid) throw new Error('cannot derive an access token without the session UID');
    return createHmac('sha256', this.key)
      .update(`${subject.namespace}/${subject.name}/${subject.uid}`)
      .digest('hex');
  }

  /** True when `presented` is that session's token (constant time). */
  verify(subject: TokenSubject, presented: string): boolean {
    return safeEqual(this.token(subject), presented);
  }
}
