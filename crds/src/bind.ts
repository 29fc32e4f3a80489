/**
 * The bind key of warm pools (docs/adr/0016-warm-pools.md). A warm Pod starts before any session
 * exists, so it cannot hold a session token; it holds nothing secret at all. Its agent gets the
 * operator's Ed25519 *public* key and accepts exactly one bind, signed with the matching private
 * key, naming its own Pod (namespace, name, UID) and carrying the session token; from then on it
 * accepts that token and nothing else.
 *
 * The key pair derives from the master key (HMAC-SHA256 with a label of its own as the Ed25519
 * seed), so every operator replica has the same pair without another Secret, and rotating the
 * master key rotates it: warm Pods that carry the old public key are outdated and replaced.
 * The private key never leaves the operator; the gateway does not need either half.
 */
import { createHmac, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

import { MIN_MASTER_KEY_BYTES } from './token.js';
import type { BindPayload, BindRequest } from './wire/generated/types.js';

/** Label of the HMAC that turns the master key into the bind key's seed (domain separation). */
const SEED_LABEL = 'sandbox.dev/bind-signing-key/v1';
/** DER prefix of a PKCS#8 Ed25519 private key; the 32-byte seed follows. */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
/** DER prefix of an SPKI Ed25519 public key; the 32-byte key follows. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PUBLIC_KEY_HEX = /^[0-9a-f]{64}$/;

/** The operator's half: signs binds. */
export interface BindSigner {
  /** The public key as 64 hex characters (what warm Pods get as SANDBOX_AGENT_BIND_KEY). */
  readonly publicKeyHex: string;
  /** A signed bind request for this payload. */
  sign(payload: BindPayload): BindRequest;
}

/** Derives the bind key pair from the master key. */
export function bindSigner(masterKey: Buffer): BindSigner {
  if (masterKey.length < MIN_MASTER_KEY_BYTES) {
    throw new Error(`master key must be at least ${MIN_MASTER_KEY_BYTES} bytes`);
  }
  const seed = createHmac('sha256', masterKey).update(SEED_LABEL).digest();
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  const publicKeyHex = spki.subarray(SPKI_PREFIX.length).toString('hex');
  return {
    publicKeyHex,
    sign: (payload) => signWith(privateKey, payload),
  };
}

function signWith(privateKey: KeyObject, payload: BindPayload): BindRequest {
  const text = JSON.stringify(payload);
  return { payload: text, signature: sign(null, Buffer.from(text, 'utf8'), privateKey).toString('base64') };
}

/** The agent's half: the public key from its 64 hex characters; throws when malformed. */
export function bindVerifyKey(publicKeyHex: string): KeyObject {
  if (!PUBLIC_KEY_HEX.test(publicKeyHex)) {
    throw new Error('the bind key must be 64 lowercase hex characters (an Ed25519 public key)');
  }
  return createPublicKey({
    key: Buffer.concat([SPKI_PREFIX, Buffer.from(publicKeyHex, 'hex')]),
    format: 'der',
    type: 'spki',
  });
}

/**
 * True when `request.signature` is the bind key's signature of exactly `request.payload`. Checks
 * the signature only: the caller then parses the payload and checks what it names.
 */
export function verifyBindSignature(key: KeyObject, request: BindRequest): boolean {
  const signature = Buffer.from(request.signature, 'base64');
  if (signature.length !== 64) return false;
  return verify(null, Buffer.from(request.payload, 'utf8'), key, signature);
}
