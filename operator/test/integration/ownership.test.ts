/**
 * Ownership on a real API server: objects with our deterministic names that this session does not
 * own are never adopted nor deleted; a session deleted and re-created under the same name never
 * reuses its predecessor's Secret (whose token derives from the old UID).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { deriveToken, readMasterKeyFile } from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';
import { masterKeyFile } from './harness/operator-process.js';
import { eventReasons, gone, ready, readPod, readSecret, readyIs } from './harness/sessions.js';

const fx = new OperatorFixture('op-own');
const { kube, ns, sessions } = fx;

beforeAll(async () => {
  await fx.setup();
  await fx.startController({ env: { BACKOFF_BASE_MS: '200', BACKOFF_MAX_SECONDS: '2' } });
});

afterAll(async () => {
  await fx.teardown('SIGTERM');
});

describe('foreign objects', () => {
  it('a Secret with our name that we do not own: NameConflict, a Warning event, nothing adopted or deleted', async () => {
    await kube.core.createNamespacedSecret({
      namespace: ns.name,
      body: {
        metadata: { name: 'sbs-taken-token', labels: { app: 'someone-else' } },
        stringData: { token: 'theirs' },
      },
    });
    await sessions.create('taken');
    const s = await sessions.waitFor('taken', readyIs('False', 'NameConflict'));
    expect(ready(s)?.message).toMatch(/Secret sbs-taken-token exists and is not owned/);
    expect(s?.status?.phase).toBe('Failed');
    await waitFor(
      () => eventReasons(kube.core, ns.name, 'taken'),
      predicate('a NameConflict event', (r) => r.includes('NameConflict')),
    );
    const secret = await readSecret(kube.core, ns.name, 'sbs-taken-token');
    expect(secret?.metadata?.ownerReferences).toBeUndefined();
    expect(Buffer.from(secret?.data?.token ?? '', 'base64').toString()).toBe('theirs');
    expect(await readPod(kube.core, ns.name, 'sbs-taken')).toBeUndefined();

    // Once its owner removes it, the session provisions (the retry with backoff notices).
    await kube.core.deleteNamespacedSecret({ namespace: ns.name, name: 'sbs-taken-token' });
    await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-taken'),
      predicate('pod sbs-taken', (p) => p !== undefined),
      {
        timeoutMs: 30_000,
      },
    );
    const mine = await readSecret(kube.core, ns.name, 'sbs-taken-token');
    expect(mine?.metadata?.ownerReferences?.[0]?.name).toBe('taken');
  });

  it('a Pod with our name that we do not own is left alone', async () => {
    await kube.core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: {
          name: 'sbs-squatted',
          labels: { 'app.kubernetes.io/managed-by': 'sandbox-operator', 'sandbox.dev/session': 'squatted' },
        },
        spec: { containers: [{ name: 'x', image: 'example.invalid/x' }] },
      },
    });
    await sessions.create('squatted');
    const s = await sessions.waitFor('squatted', readyIs('False', 'NameConflict'));
    expect(ready(s)?.message).toMatch(/Pod sbs-squatted/);
    const pod = await readPod(kube.core, ns.name, 'sbs-squatted');
    expect(pod?.metadata?.ownerReferences).toBeUndefined();
    expect(pod?.spec?.containers[0]?.name).toBe('x');
  });
});

describe('a session re-created with the same name', () => {
  it('waits for the previous Secret to go, then gets its own with the new UID and token', async () => {
    const first = await sessions.create('phoenix');
    await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-phoenix'),
      predicate('pod sbs-phoenix', (p) => p !== undefined),
    );
    // Hold the old Secret (a finalizer) so it is still there, owned by the old UID, when the new
    // session with the same name is reconciled.
    await kube.core.patchNamespacedSecret(
      {
        namespace: ns.name,
        name: 'sbs-phoenix-token',
        body: { metadata: { finalizers: ['sandbox.dev/test-hold'] } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const oldSecret = await readSecret(kube.core, ns.name, 'sbs-phoenix-token');
    await sessions.delete('phoenix');
    await sessions.waitFor('phoenix', gone);
    const second = await sessions.create('phoenix');
    expect(second.metadata.uid).not.toBe(first.metadata.uid);

    const waiting = await sessions.waitFor('phoenix', readyIs('False', 'Creating'));
    await sessions.waitFor(
      'phoenix',
      predicate('waiting for the previous Secret', (s) =>
        /previous SandboxSession/.test(ready(s)?.message ?? ''),
      ),
    );
    // The new session is the one waiting (not the old one's last state).
    expect(waiting?.metadata.uid).toBe(second.metadata.uid);
    expect((await readSecret(kube.core, ns.name, 'sbs-phoenix-token'))?.metadata?.uid).toBe(
      oldSecret?.metadata?.uid,
    );
    expect(await readPod(kube.core, ns.name, 'sbs-phoenix')).toBeUndefined();

    await kube.core.patchNamespacedSecret(
      { namespace: ns.name, name: 'sbs-phoenix-token', body: { metadata: { finalizers: null } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const secret = await waitFor(
      () => readSecret(kube.core, ns.name, 'sbs-phoenix-token'),
      predicate(
        'the new session owns sbs-phoenix-token',
        (s) => s?.metadata?.ownerReferences?.[0]?.uid === second.metadata.uid,
      ),
      { timeoutMs: 60_000 },
    );
    expect(secret?.metadata?.uid).not.toBe(oldSecret?.metadata?.uid);
    expect(secret?.metadata?.annotations?.['sandbox.dev/session-uid']).toBe(second.metadata.uid);
    const expected = deriveToken(readMasterKeyFile(masterKeyFile()), {
      namespace: ns.name,
      name: 'phoenix',
      uid: second.metadata.uid!,
    });
    expect(Buffer.from(secret?.data?.token ?? '', 'base64').toString()).toBe(expected);
    await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-phoenix'),
      predicate(
        'the new session owns sbs-phoenix',
        (p) => p?.metadata?.ownerReferences?.[0]?.uid === second.metadata.uid,
      ),
      { timeoutMs: 60_000 },
    );
  });
});
