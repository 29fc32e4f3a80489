/**
 * e2e (issue 27, docs/adr/0016 "Env, Secrets and startup at bind time"): a pooled session with two
 * env values and a Secret reference, created through the gateway.
 *
 * - `echo $A $B $C` prints all three;
 * - the Pod (`kubectl get pod -o yaml`), the namespace's Events, and the operator's and the
 *   gateway's logs contain none of the three values; the SandboxSession contains the Secret's value
 *   nowhere, and the two plain values only where the tenant wrote them (spec.env: the CR is the
 *   tenant's own request), never in its status;
 * - a reference to a Secret the namespace does not have: Ready=False, reason SecretNotFound, the
 *   message naming the Secret and no warm Pod taken; once the Secret exists, the session starts;
 * - a reference to another namespace's Secret is refused at apply time (the API server's 422).
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { API_VERSION, KIND, PLURAL, GROUP, VERSION } from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { deletePool } from '../support/custom-objects.js';
import {
  deleteSecret,
  kube,
  NS,
  observable,
  platformLogs,
  poolPods,
  putSecret,
  READY_MS,
  sbx,
  session,
  warmOf,
  warmPool,
} from './support.js';

const suffix = randomBytes(3).toString('hex');
const POOL = `warm-env-${suffix}`;
const SECRET = `warm-env-${suffix}`;
const LATER = `warm-later-${suffix}`;
const A = `alpha-${randomBytes(6).toString('hex')}`;
const B = `bravo-${randomBytes(6).toString('hex')}`;
const C = `secret-${randomBytes(8).toString('hex')}`;
const names = { ok: `warm-env-${suffix}`, missing: `warm-missing-${suffix}` };

const create = (name: string, secret: string): Promise<unknown> =>
  // secretEnv is newer than the SDK's request type; the SDK sends the body as it is.
  sbx.createSession({
    name,
    pool: POOL,
    idleTimeoutSeconds: 900,
    env: { A, B },
    secretEnv: { C: { secret, key: 'token' } },
  } as Parameters<typeof sbx.createSession>[0]);

const readyReason = async (name: string): Promise<string | undefined> =>
  (await session(name))?.status?.conditions?.find((c) => c.type === 'Ready')?.reason;

describe('a pooled session with two env values and a Secret reference', () => {
  beforeAll(async () => {
    await putSecret(SECRET, 'token', C);
    await warmPool(POOL, 2);
  }, READY_MS);

  afterAll(async () => {
    await Promise.all(Object.values(names).map((n) => sbx.deleteSession(n).catch(() => undefined)));
    await deletePool(kube, NS, POOL).catch(() => undefined);
    await Promise.all([deleteSecret(SECRET), deleteSecret(LATER)]);
  });

  it('prints all three; no Pod, Event, status or platform log holds them', async () => {
    await create(names.ok, SECRET);
    const out = await sbx.exec(names.ok, { command: 'echo $A $B $C', waitSeconds: 120 });
    expect(out.stdout).toBe(`${A} ${B} ${C}\n`);
    const s = (await session(names.ok))!;
    expect(s.status?.podName).toMatch(new RegExp(`^${POOL}-`));
    const seen = await observable(s);
    const logs = await platformLogs();
    for (const value of [A, B, C]) {
      expect({ value, pod: seen.pod.includes(value) }).toEqual({ value, pod: false });
      expect({ value, events: seen.events.includes(value) }).toEqual({ value, events: false });
      expect({ value, status: seen.status.includes(value) }).toEqual({ value, status: false });
      expect({ value, logs: logs.includes(value) }).toEqual({ value, logs: false });
    }
    // The CR is the tenant's request: the plain values are in its spec.env, the Secret's value nowhere.
    expect(JSON.stringify(s)).not.toContain(C);
    expect(s.spec.env).toEqual([
      { name: 'A', value: A },
      { name: 'B', value: B },
      { name: 'C', valueFrom: { secretKeyRef: { name: SECRET, key: 'token' } } },
    ]);
  });

  it('a Secret the namespace does not have: SecretNotFound, no warm Pod taken; it starts once the Secret exists', async () => {
    const warmBefore = warmOf(await poolPods(POOL)).length;
    await create(names.missing, LATER);
    await waitFor(
      () => readyReason(names.missing),
      predicate(`${names.missing}: SecretNotFound`, (r) => r === 'SecretNotFound'),
      { timeoutMs: READY_MS, intervalMs: 500 },
    );
    const s = (await session(names.missing))!;
    expect(s.status?.conditions?.[0]?.message).toBe(
      `env C: Secret ${LATER} does not exist in the session's namespace`,
    );
    expect(s.status?.podName).toBe(`sbs-${names.missing}`);
    const bound = (await poolPods(POOL)).filter((p) =>
      p.metadata?.ownerReferences?.some((o) => o.uid === s.metadata.uid),
    );
    expect(bound).toEqual([]);
    expect(warmOf(await poolPods(POOL)).length).toBeGreaterThanOrEqual(Math.min(warmBefore, 1));
    await putSecret(LATER, 'token', C);
    const out = await sbx.exec(names.missing, { command: 'echo $C', waitSeconds: 120 });
    expect(out.stdout).toBe(`${C}\n`);
  });

  it("another namespace's Secret is refused at apply time", async () => {
    const err = await kube.custom
      .createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: NS,
        body: {
          apiVersion: API_VERSION,
          kind: KIND,
          metadata: { name: `warm-xns-${suffix}` },
          spec: {
            poolRef: { name: POOL },
            env: [
              {
                name: 'C',
                valueFrom: { secretKeyRef: { name: SECRET, key: 'token', namespace: 'kube-system' } },
              },
            ],
          },
        },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(k8s.ApiException);
    expect((err as k8s.ApiException<unknown>).code).toBe(422);
    expect(String((err as k8s.ApiException<unknown>).body)).toMatch(
      /secretKeyRef.namespace is not allowed: a session reads only Secrets of its own namespace/,
    );
  });
});
