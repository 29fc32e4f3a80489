import { describe, expect, it } from '@jest/globals';

import { sessionRef } from '../../../src/resources/metadata.js';
import { buildWorkspaceClaim, hasPersistentWorkspace } from '../../../src/resources/workspace-claim.js';
import { session, withSpec } from '../../fixtures/sessions.js';

const opts = { defaultWorkspaceSize: '2Gi' };

describe('buildWorkspaceClaim', () => {
  it('names, labels and owns the claim; size, class and access mode from the spec', () => {
    const s = session(
      withSpec({
        workspace: {
          sizeLimit: '8Gi',
          persistentVolumeClaim: { storageClassName: 'fast', accessMode: 'ReadWriteMany' },
        },
      }),
    );
    expect(buildWorkspaceClaim(s, sessionRef(s), opts)).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: 'sbs-demo-workspace',
        namespace: 'team-a',
        labels: { 'app.kubernetes.io/managed-by': 'sandbox-operator', 'sandbox.dev/session': 'demo' },
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
      },
      spec: {
        accessModes: ['ReadWriteMany'],
        storageClassName: 'fast',
        volumeMode: 'Filesystem',
        resources: { requests: { storage: '8Gi' } },
      },
    });
  });

  it('defaults: ReadWriteOnce, no class (the cluster default), the operator size', () => {
    const s = session(withSpec({ workspace: { persistentVolumeClaim: {} } }));
    const claim = buildWorkspaceClaim(s, sessionRef(s), opts);
    expect(claim.spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      storageClassName: undefined,
      volumeMode: 'Filesystem',
      resources: { requests: { storage: '2Gi' } },
    });
  });

  it('refuses a session without a persistent workspace', () => {
    const s = session();
    expect(hasPersistentWorkspace(s)).toBe(false);
    expect(() => buildWorkspaceClaim(s, sessionRef(s), opts)).toThrow(/no persistent workspace/);
  });
});
