/** Bearer token check, constant time in the token's content. */
import type { IncomingMessage } from 'node:http';

import { safeEqual } from '@sandbox-platform/api';

const BEARER = /^Bearer ([^\s]+)$/i;

/** True when the request carries `Authorization: Bearer <token>` with exactly this token. */
export function isAuthorized(req: IncomingMessage, token: string): boolean {
  const match = BEARER.exec(req.headers.authorization ?? '');
  return match?.[1] !== undefined && safeEqual(match[1], token);
}
