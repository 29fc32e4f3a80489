/**
 * How E2B credentials reach the gateway's one authentication hook (plugins/auth.ts), so that
 * E2B calls get exactly the per-key limits, load shedding and tenancy of the REST API:
 *
 * - The control API key: the SDKs send it as `X-API-Key`; the bridge (auth-bridge.ts) copies it
 *   into `Authorization: Bearer`. Older SDKs check that a key looks like `e2b_<hex>` (newer ones
 *   do not); `e2b_` followed by the hex of one of our keys' bytes is accepted as that key, so
 *   such an SDK can carry any key: `E2B_API_KEY=e2b_$(printf %s "$KEY" | xxd -p | tr -d '\n')`.
 * - envd calls carry a session's access token instead of a key. The bridge checks it and hands
 *   the auth hook a ticket: a random one-time credential that this authenticator exchanges for
 *   the principal the bridge built (the session's creating key, that one namespace). Tickets live
 *   in this process only, for the few microtasks between the two hooks; a presented string that
 *   is not a ticket this process issued never authenticates as one.
 */
import { randomBytes } from 'node:crypto';

import type { KeyAuthenticator, Principal } from '../auth/keys.js';

/** Prefix of a ticket (never a valid API key: keys in the key file are compared by hash only). */
export const TICKET_PREFIX = 'e2b-ticket.';

const HEX_KEY = /^e2b_((?:[0-9a-f]{2})+)$/;

/** The key an `e2b_<hex>` string encodes, if it is one and the bytes are UTF-8 text. */
export function decodeHexKey(presented: string): string | undefined {
  const hex = HEX_KEY.exec(presented)?.[1];
  if (hex === undefined) return undefined;
  const bytes = Buffer.from(hex, 'hex');
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes) ? text : undefined;
}

/** The API key authenticator of the gateway, extended with E2B's key form and envd tickets. */
export class E2bKeyAuthenticator implements KeyAuthenticator {
  private readonly tickets = new Map<string, Principal>();

  constructor(private readonly inner: KeyAuthenticator) {}

  authenticate(presented: string): Principal | undefined {
    if (presented.startsWith(TICKET_PREFIX)) return this.redeem(presented);
    const direct = this.inner.authenticate(presented);
    if (direct) return direct;
    const decoded = decodeHexKey(presented);
    return decoded === undefined ? undefined : this.inner.authenticate(decoded);
  }

  /** A one-time credential for `principal`; `release` forgets it if it was never redeemed. */
  issue(principal: Principal): { credential: string; release: () => void } {
    const credential = TICKET_PREFIX + randomBytes(32).toString('hex');
    this.tickets.set(credential, principal);
    return { credential, release: () => this.tickets.delete(credential) };
  }

  /** Tickets issued and not yet redeemed nor released (for tests). */
  get outstanding(): number {
    return this.tickets.size;
  }

  private redeem(credential: string): Principal | undefined {
    const principal = this.tickets.get(credential);
    if (principal) this.tickets.delete(credential);
    return principal;
  }
}
