/**
 * e2e (issue 13): sessions that keep their work, on a real node through the in-cluster gateway.
 *
 * - A file and a tool under ~/.local/bin survive suspend and resume; while suspended the Pod is
 *   gone, the workspace claim Bound and the Secret kept; after the resume the same token works.
 * - idleTimeoutSeconds 10 + shutdownPolicy Suspend: the operator suspends the session when idle;
 *   the next exec through the gateway (REST, and MCP) resumes it and answers in that one call.
 * - The Pod deleted from outside, and evicted: the new Pod has the same workspace.
 * - 10 concurrent execs through the two gateway replicas against one suspended session: one Pod,
 *   every call answers.
 * - Bad input: an unknown StorageClass and a claim nothing binds get their Ready reasons.
 *
 * Lean: the sessions are created at once and waited for in parallel; the slow bad-input case (the
 * operator's bind timeout, 60 s) runs alongside the others. Needs `make platform-up` (the chart,
 * the local-path StorageClass, platform.env).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  API_VERSION,
  CONDITIONS,
  GROUP,
  KIND,
  LABELS,
  PLURAL,
  REASONS,
  VERSION,
  podName,
  secretName,
  type SandboxSessionSpec,
} from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { mcpToolCall } from '../support/mcp.js';
import { uniqueName } from '../isolation/support.js';
import {
  NS,
  READY_MS,
  anyPod,
  claimPhase,
  client,
  exec,
  kube,
  pods,
  sbx,
  session,
  waitReason,
} from './support.js';

const storage = kube.kc.makeApiClient(k8s.StorageV1Api);

const names = {
  keep: uniqueName('ws-keep'),
  idleRest: uniqueName('ws-idle-rest'),
  idleMcp: uniqueName('ws-idle-mcp'),
  many: uniqueName('ws-many'),
  noClass: uniqueName('ws-noclass'),
  unbound: uniqueName('ws-unbound'),
};
const NEVER_CLASS = uniqueName('e2e-never-binds');

async function createCr(name: string, spec: SandboxSessionSpec): Promise<void> {
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: PLURAL,
    namespace: NS,
    body: { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec },
  });
}

/** MCP exec through the gateway. */
function mcpExec(name: string, command: string): Promise<{ isError?: boolean; text: string }> {
  return mcpToolCall('exec', { session: name, namespace: NS, command });
}

/** Events recorded about a session, by reason. */
async function eventReasons(name: string): Promise<string[]> {
  const list = await kube.core.listNamespacedEvent({
    namespace: NS,
    fieldSelector: `involvedObject.name=${name}`,
  });
  return list.items.map((e) => e.reason ?? '');
}

async function waitEvents(name: string, reasons: string[]): Promise<void> {
  await waitFor(
    () => eventReasons(name),
    predicate(`events ${reasons.join(',')} of ${name}`, (got) => reasons.every((r) => got.includes(r))),
    {
      timeoutMs: 30_000,
    },
  );
}

const persistent = { persistentWorkspace: true } as const;
/** idleTimeoutSeconds of the Suspend-policy sessions: all of it is waited for, so short. */
const IDLE_SECONDS = 10;

beforeAll(async () => {
  // A StorageClass whose provisioner nobody runs: its claims never bind.
  await storage.createStorageClass({
    body: {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: NEVER_CLASS },
      provisioner: 'sandbox.dev/e2e-nobody',
      volumeBindingMode: 'Immediate',
    },
  });
  await Promise.all([
    createCr(names.noClass, { workspace: { persistentVolumeClaim: { storageClassName: 'no-such-class' } } }),
    createCr(names.unbound, { workspace: { persistentVolumeClaim: { storageClassName: NEVER_CLASS } } }),
    sbx.createSession({ name: names.keep, ...persistent, idleTimeoutSeconds: 900 }),
    sbx.createSession({ name: names.many, ...persistent, idleTimeoutSeconds: 900 }),
    sbx.createSession({
      name: names.idleRest,
      ...persistent,
      shutdownPolicy: 'Suspend',
      idleTimeoutSeconds: IDLE_SECONDS,
    }),
    sbx.createSession({
      name: names.idleMcp,
      ...persistent,
      shutdownPolicy: 'Suspend',
      idleTimeoutSeconds: IDLE_SECONDS,
    }),
  ]);
}, READY_MS);

afterAll(async () => {
  await Promise.all(Object.values(names).map((n) => sbx.deleteSession(n).catch(() => undefined)));
  await storage.deleteStorageClass({ name: NEVER_CLASS }).catch(() => undefined);
});

describe('suspend and resume keep the work', () => {
  it('a file and ~/.local/bin survive; while suspended: no Pod, claim Bound, Secret kept; the token still works', async () => {
    const name = names.keep;
    const before = await exec(
      name,
      'mkdir -p ~/.local/bin && printf "#!/bin/sh\\necho tool-ok\\n" > ~/.local/bin/mytool && chmod +x ~/.local/bin/mytool' +
        ' && echo kept-data > notes.txt && echo "$HOME" && sha256sum < /var/run/sandbox/token',
    );
    expect(before.exitCode).toBe(0);
    const [home, tokenSum] = before.stdout.trim().split('\n');
    expect(home).toBe('/workspace');
    const secretUid = (await kube.core.readNamespacedSecret({ namespace: NS, name: secretName(name) }))
      .metadata?.uid;

    const suspended = await sbx.suspendSession(name);
    expect(suspended.suspended).toBe(true);
    await waitReason(name, REASONS.suspended);
    await waitFor(
      () => anyPod(name),
      predicate('the Pod is gone', (n) => n === 0),
      { timeoutMs: 60_000 },
    );
    expect(await claimPhase(name)).toBe('Bound');
    expect(
      (await kube.core.readNamespacedSecret({ namespace: NS, name: secretName(name) })).metadata?.uid,
    ).toBe(secretUid);
    expect((await sbx.getSession(name)).reason).toBe('Suspended');

    const after = await exec(
      name,
      'cat notes.txt && ~/.local/bin/mytool && sha256sum < /var/run/sandbox/token',
    );
    expect(after.stdout.trim().split('\n')).toEqual(['kept-data', 'tool-ok', tokenSum]);
    await waitEvents(name, ['Suspended', 'Resumed']);
  });

  it('the Pod deleted from outside, then evicted: the new Pod has the same workspace', async () => {
    const name = names.keep;
    await exec(name, 'echo survives-pod-loss > loss.txt');
    for (const how of ['delete', 'evict'] as const) {
      const old = (await pods(name))[0]!.metadata!.uid;
      if (how === 'delete') await kube.core.deleteNamespacedPod({ namespace: NS, name: podName(name) });
      else
        await kube.core.createNamespacedPodEviction({
          namespace: NS,
          name: podName(name),
          body: {
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name: podName(name), namespace: NS },
          },
        });
      await waitFor(
        () => pods(name),
        predicate(`a new Pod after ${how}`, (p) => p.length === 1 && p[0]!.metadata!.uid !== old),
        {
          timeoutMs: 60_000,
        },
      );
      const r = await exec(name, 'cat loss.txt notes.txt');
      expect([how, r.stdout]).toEqual([how, 'survives-pod-loss\nkept-data\n']);
    }
  });
});

describe('shutdownPolicy Suspend', () => {
  it(`suspends after idleTimeoutSeconds ${IDLE_SECONDS}; the next exec through REST and through MCP resumes it and answers in one call`, async () => {
    await Promise.all(
      [names.idleRest, names.idleMcp].map(async (name) => {
        expect((await exec(name, `echo ${name} > who.txt`)).exitCode).toBe(0);
      }),
    );
    const t0 = Date.now();
    const [rest, mcp] = await Promise.all(
      [names.idleRest, names.idleMcp].map(async (name) => {
        const s = await waitReason(name, REASONS.suspended, 120_000);
        expect(s.spec.suspend).toBe(true);
        await waitFor(
          () => anyPod(name),
          predicate('the Pod is gone', (n) => n === 0),
          { timeoutMs: 60_000 },
        );
        return s;
      }),
    );
    console.log(`suspended by the operator ${Math.round((Date.now() - t0) / 1000)} s after the last exec`);
    expect(rest?.status?.conditions?.find((c) => c.type === CONDITIONS.ready)?.message).toMatch(
      new RegExp(`^No activity for ${IDLE_SECONDS}s`),
    );
    expect(mcp?.status?.phase).toBe('Suspended');

    const [viaRest, viaMcp] = await Promise.all([
      exec(names.idleRest, 'cat who.txt'),
      mcpExec(names.idleMcp, 'cat who.txt'),
    ]);
    expect(viaRest).toMatchObject({ exitCode: 0, stdout: `${names.idleRest}\n` });
    expect(viaMcp.isError).toBeFalsy();
    expect(viaMcp.text).toContain(names.idleMcp);
    for (const name of [names.idleRest, names.idleMcp])
      expect((await session(name))?.spec.suspend).toBe(false);
  });
});

describe('two gateways, one suspended session', () => {
  it('10 concurrent execs through both gateway replicas: one Pod, every call answers', async () => {
    const name = names.many;
    await exec(name, 'echo many > m.txt');
    const oldUid = (await pods(name))[0]!.metadata!.uid;
    await sbx.suspendSession(name);
    await waitReason(name, REASONS.suspended);
    await waitFor(
      () => anyPod(name),
      predicate('the Pod is gone', (n) => n === 0),
      { timeoutMs: 60_000 },
    );

    const gateways = await kube.core.listNamespacedPod({
      namespace: process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system',
      labelSelector: 'app.kubernetes.io/component=gateway',
    });
    const ips = gateways.items
      .filter((p) => p.status?.podIP && !p.metadata?.deletionTimestamp)
      .map((p) => p.status!.podIP!);
    expect(ips.length).toBeGreaterThanOrEqual(2);
    const replicas = ips.slice(0, 2).map((ip) => client(`http://${ip}:8080`));

    // Every Pod the session gets while the calls run.
    const seen = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const list = await kube.core.listNamespacedPod({
          namespace: NS,
          labelSelector: `${LABELS.session}=${name}`,
        });
        for (const p of list.items) seen.add(p.metadata!.uid!);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => exec(name, `cat m.txt; echo call-${i}`, replicas[i % 2])),
    );
    watching = false;
    await watcher;
    results.forEach((r, i) => expect([i, r.exitCode, r.stdout]).toEqual([i, 0, `many\ncall-${i}\n`]));
    seen.delete(oldUid!);
    expect([...seen]).toHaveLength(1);
    expect(await pods(name)).toHaveLength(1);
  });
});

describe('bad input', () => {
  it('an unknown StorageClass is StorageClassNotFound, and a claim nothing binds WorkspaceNotBound, not a hang', async () => {
    const [noClass, unbound] = await Promise.all([
      waitReason(names.noClass, REASONS.storageClassNotFound, 60_000),
      waitReason(names.unbound, REASONS.workspaceNotBound, 150_000),
    ]);
    expect(noClass.status?.conditions?.[0]?.message).toContain('StorageClass no-such-class');
    expect(unbound.status?.conditions?.[0]?.message).toContain(`StorageClass ${NEVER_CLASS}`);
    // The gateway answers at once with the reason (503), it does not hang.
    const err = await sbx.exec(names.unbound, { command: 'true', waitSeconds: 1 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 503, reason: REASONS.workspaceNotBound });
  });
});
