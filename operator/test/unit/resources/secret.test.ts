import { describe, expect, it } from '@jest/globals';

import { buildSecret } from '../../../src/resources/secret.js';

describe('buildSecret', () => {
  const ref = { namespace: 'team-a', name: 'demo', uid: 'uid-1' };
  const secret = buildSecret(ref, 'abc123');

  it('is named, labelled, owned and annotated with the session UID', () => {
    expect(secret.metadata).toEqual({
      name: 'sbs-demo-token',
      namespace: 'team-a',
      labels: { 'app.kubernetes.io/managed-by': 'sandbox-operator', 'sandbox.dev/session': 'demo' },
      annotations: { 'sandbox.dev/session-uid': 'uid-1' },
      ownerReferences: [
        {
          apiVersion: 'sandbox.dev/v1alpha1',
          kind: 'SandboxSession',
          name: 'demo',
          uid: 'uid-1',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
  });

  it('holds the token under key token, base64 encoded, and is immutable', () => {
    expect(secret.data).toEqual({ token: Buffer.from('abc123').toString('base64') });
    expect(secret.immutable).toBe(true);
    expect(secret.type).toBe('Opaque');
    expect(secret.stringData).toBeUndefined();
  });
});
