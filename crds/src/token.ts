/**
 * Session tokens. token = hex(HMAC-SHA256(masterKey, "<namespace>/<name>/<uid>")): every gateway
 * replica derives it without reading Secrets, and a session re-created with the same name gets a
 * new UID and therefore a new token. The master key never enters a sandbox Pod.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Minimum master key length in bytes: shorter keys are refused at startup. */
export const MIN_MASTER_KEY_BYTES = 32;

/** Identity of a session that a token is bound to. */
export interface TokenSubject {
  namespace: string;
  name: string;
  uid: string;
}

/** Derives the agent token of one session. */
export function deriveToken(masterKey: Buffer, subject: TokenSubject): string {
  if (masterKey.length < MIN_MASTER_KEY_BYTES) {
    throw new Error(`master key must be at least ${MIN_MASTER_KEY_BYTES} bytes`);
  }
  if (!subject.uid) throw new Error('cannot derive a token without the session UID');
  return createHmac('sha256', masterKey)
    .update(`${subject.namespace}/${subject.name}/${subject.uid}`)
    .digest('hex');
}

/** Constant-time comparison of two secrets (false for different lengths without early exit on content). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}
