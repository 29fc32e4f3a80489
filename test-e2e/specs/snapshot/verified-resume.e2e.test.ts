/**
 * e2e (issue 26, verified resume; docs/snapshots.md "Verified resume"), on the local cluster (the
 * second case writes into the workspace's volume on this machine while the session is suspended).
 *
 * - A persistent-workspace session suspended: status.workspaceDigest records the digest of the
 *   suspended Pod's /workspace; resumed: WorkspaceVerified=True ResumeVerified, seen through REST
 *   and MCP (list_sessions), the files as they were.
 * - Suspended again, a file added to the volume behind the session's back (on the node): resumed,
 *   WorkspaceVerified=False ResumeDigestMismatch with a Warning Event WorkspaceChanged, and the
 *   session is Ready with the changed data (the files are the tenant's; the caller decides).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, expect, it } from '@jest/globals';
import {
  LABELS,
  WORKSPACE_EVENT_REASONS,
  WORKSPACE_REASONS,
  workspaceClaimName,
} from '@sandbox-platform/api';

import { describeOnLocal } from '../../src/framework/not-run.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { mcpToolCall } from '../support/mcp.js';
import { NS, READY_MS, kube, ready, run, sbx, session, unique, verified, waitCondition } from './support.js';

const name = unique('vresume');

async function noPod(): Promise<void> {
  await waitFor(
    () => kube.core.listNamespacedPod({ namespace: NS, labelSelector: `${LABELS.session}=${name}` }),
    predicate(`no Pod of ${name}`, (l) => l.items.length === 0),
    { timeoutMs: READY_MS, intervalMs: 500 },
  );
}

/** Suspends the session and waits until its Pod is gone; the digest recorded for that Pod. */
async function suspend(): Promise<{ digest: string; podUID: string }> {
  const before = await kube.core.listNamespacedPod({
    namespace: NS,
    labelSelector: `${LABELS.session}=${name}`,
  });
  const podUID = before.items[0]!.metadata!.uid!;
  await sbx.suspendSession(name);
  await noPod();
  const s = await session(name);
  const recorded = s?.status?.workspaceDigest;
  expect(recorded).toMatchObject({ podUID, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
  return { digest: recorded!.digest!, podUID };
}

/** MCP list_sessions through the gateway: the session's entry. */
async function mcpView(): Promise<Record<string, unknown> | undefined> {
  const { text } = await mcpToolCall('list_sessions', { namespace: NS }, 60_000);
  const parsed = JSON.parse(text || '{}') as { items?: Array<Record<string, unknown>> };
  return parsed.items?.find((i) => i.name === name);
}

/** The node directory behind the session's workspace claim (local-path: a hostPath PV). */
async function volumeDir(): Promise<string> {
  const claim = await kube.core.readNamespacedPersistentVolumeClaim({
    namespace: NS,
    name: workspaceClaimName(name),
  });
  const pv = await kube.core.readPersistentVolume({ name: claim.spec!.volumeName! });
  const dir = pv.spec?.hostPath?.path ?? pv.spec?.local?.path;
  if (!dir) throw new Error(`PV ${pv.metadata?.name} has no hostPath or local path`);
  return dir;
}

afterAll(async () => {
  await sbx.deleteSession(name).catch(() => undefined);
});

describeOnLocal('verified resume of a persistent workspace', () => {
  it('records the digest at suspension, verifies it at resume (REST and MCP show ResumeVerified)', async () => {
    await sbx.createSession({ name, persistentWorkspace: true, idleTimeoutSeconds: 1800 });
    await run(
      name,
      'mkdir -p kept && printf "one\\n" > kept/a.txt && head -c 65536 /dev/urandom > kept/blob',
    );
    const files = await run(name, 'sha256sum kept/a.txt kept/blob');
    await suspend();
    expect(await run(name, 'sha256sum kept/a.txt kept/blob')).toBe(files);
    const s = await waitCondition(name, 'WorkspaceVerified', WORKSPACE_REASONS.resumeVerified);
    expect(verified(s)?.status).toBe('True');
    expect(ready(s)).toBe(true);
    expect((await sbx.getSession(name)).workspaceVerified).toMatchObject({
      status: 'True',
      reason: WORKSPACE_REASONS.resumeVerified,
    });
    expect(await mcpView()).toMatchObject({
      workspaceVerified: { status: 'True', reason: WORKSPACE_REASONS.resumeVerified },
    });
  });

  it('reports a workspace changed while suspended: ResumeDigestMismatch, a Warning Event, the session Ready', async () => {
    const { digest } = await suspend();
    // Behind the session's back: a file written into the volume on the node.
    writeFileSync(join(await volumeDir(), 'planted.txt'), 'not from the session\n', { mode: 0o644 });
    expect(await run(name, 'cat planted.txt')).toBe('not from the session\n');
    const s = await waitCondition(name, 'WorkspaceVerified', WORKSPACE_REASONS.resumeDigestMismatch);
    expect(verified(s)?.status).toBe('False');
    expect(verified(s)?.message).toContain(digest);
    expect(ready(s)).toBe(true);
    expect((await sbx.getSession(name)).workspaceVerified?.reason).toBe(
      WORKSPACE_REASONS.resumeDigestMismatch,
    );
    const events = await waitFor(
      () => kube.core.listNamespacedEvent({ namespace: NS, fieldSelector: `involvedObject.name=${name}` }),
      predicate('a WorkspaceChanged Warning', (l) =>
        l.items.some((e) => e.reason === WORKSPACE_EVENT_REASONS.resumeMismatch && e.type === 'Warning'),
      ),
      { timeoutMs: 30_000 },
    );
    expect(events.items.length).toBeGreaterThan(0);
  });
});
