/**
 * The token Secret of a session. Pure: the caller derives the token (deriveToken) and does the I/O.
 * The Secret is immutable: the token of a session never changes (it derives from the session UID),
 * so nothing should ever update it, and immutable Secrets also spare the kubelet a watch each.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { ANNOTATIONS, TOKEN_SECRET_KEY, secretName } from '@sandbox-platform/api';

import { childMetadata, type SessionRef } from './metadata.js';

/** Builds the Secret holding `token` under key `token`, annotated with the session UID. */
export function buildSecret(ref: SessionRef, token: string): V1Secret {
  const metadata = childMetadata(ref, secretName(ref.name));
  metadata.annotations = { [ANNOTATIONS.sessionUID]: ref.uid };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata,
    type: 'Opaque',
    immutable: true,
    data: { [TOKEN_SECRET_KEY]: Buffer.from(token, 'utf8').toString('base64') },
  };
}
