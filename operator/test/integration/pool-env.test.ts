/**
 * Env, Secrets and startup of pooled sessions on a real API server (docs/adr/0016, "Env, Secrets
 * and startup at bind time"), with real agents standing in for the warm Pods (harness/warm-agents.ts)
 * and the operator as a child process:
 *
 * - a pooled session with two plain values and a Secret reference: its shell prints all three;
 *   the warm Pod, the session (spec aside: the plain values are the tenant's own spec), its Events
 *   and the operator's log (debug) hold no value read from the Secret, nor the plain values
 *   outside the spec;
 * - a reference to a Secret the namespace does not have: Ready=False/SecretNotFound, no Pod
 *   claimed; the session provisions once the Secret exists;
 * - the CRD refuses a reference to another namespace's Secret (secretKeyRef.namespace), an entry
 *   with both a value and valueFrom, and startup with KubernetesExec; it takes env and startup
 *   next to spec.poolRef.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  deriveToken,
  GROUP,
  POOL_PLURAL,
  readMasterKeyFile,
  VERSION,
  type SandboxSession,
} from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';
import { masterKeyFile, type OperatorProcess } from './harness/operator-process.js';
import { readyIs } from './harness/sessions.js';
import { WarmAgents } from './harness/warm-agents.js';

const fx = new OperatorFixture('op-pool-env');
const { kube, ns, sessions } = fx;
const masterKey = (): Buffer => readMasterKeyFile(masterKeyFile());
let agents: WarmAgents;
let operator: OperatorProcess;

const SECRET_VALUE = `secret-${randomBytes(8).toString('hex')}`;
const PLAIN_A = `plain-a-${randomBytes(8).toString('hex')}`;
const PLAIN_B = `plain-b-${randomBytes(8).toString('hex')}`;

beforeAll(async () => {
  await fx.setup();
  agents = new WarmAgents(kube.core, ns.name, masterKey());
  operator = await fx.startController({ env: { POOL_AGENT_PORT: String(agents.port), LOG_LEVEL: 'debug' } });
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: POOL_PLURAL,
    namespace: ns.name,
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxPool',
      metadata: { name: 'envpool' },
      spec: { replicas: 2 },
    },
  });
  await waitFor(
    () => agents.warmPods('envpool'),
    predicate('2 warm Pods', (pods) => pods.length >= 2),
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  await agents.startWarm('envpool');
});

afterAll(async () => {
  await fx.teardown('SIGKILL');
  await agents.stopAll();
});

const env = (secret: string) => [
  { name: 'A', value: PLAIN_A },
  { name: 'B', value: PLAIN_B },
  { name: 'C', valueFrom: { secretKeyRef: { name: secret, key: 'token' } } },
];

async function putSecret(name: string): Promise<void> {
  await kube.core.createNamespacedSecret({
    namespace: ns.name,
    body: { metadata: { name }, stringData: { token: SECRET_VALUE } },
  });
}

const tokenOf = (s: SandboxSession): string =>
  deriveToken(masterKey(), { namespace: ns.name, name: s.metadata.name!, uid: s.metadata.uid! });
const refusal = (err: unknown): string => (err instanceof k8s.ApiException ? String(err.body) : '');

describe('a pooled session with two env values and a Secret reference', () => {
  it('prints all three in its shell; no Pod, status, Event or operator log line holds them', async () => {
    await putSecret('api');
    await sessions.create('env-ok', { poolRef: { name: 'envpool' }, env: env('api') });
    const s = (await sessions.waitFor('env-ok', readyIs('True', 'SandboxReady')))!;
    const pod = s.status!.podName!;
    expect(await agents.execOutput(pod, tokenOf(s), 'echo $A $B $C')).toBe(
      `${PLAIN_A} ${PLAIN_B} ${SECRET_VALUE}\n`,
    );
    const podYaml = JSON.stringify(await kube.core.readNamespacedPod({ namespace: ns.name, name: pod }));
    const events = JSON.stringify(await kube.core.listNamespacedEvent({ namespace: ns.name }));
    const logs = JSON.stringify(operator.lines);
    for (const value of [SECRET_VALUE, PLAIN_A, PLAIN_B]) {
      expect([value, podYaml.includes(value), events.includes(value), logs.includes(value)]).toEqual([
        value,
        false,
        false,
        false,
      ]);
      expect(JSON.stringify(s.status)).not.toContain(value);
    }
    expect(JSON.stringify(s)).not.toContain(SECRET_VALUE);
  });
});

describe('a reference to a Secret the namespace does not have', () => {
  it('gives Ready=False/SecretNotFound and claims nothing; the session provisions once it exists', async () => {
    await sessions.create('env-missing', { poolRef: { name: 'envpool' }, env: env('later') });
    const s = await sessions.waitFor('env-missing', readyIs('False', 'SecretNotFound'));
    expect(s?.status?.conditions?.[0]?.message).toBe(
      "env C: Secret later does not exist in the session's namespace",
    );
    expect(s?.status?.podName).toBe('sbs-env-missing');
    const pods = await kube.core.listNamespacedPod({ namespace: ns.name });
    expect(
      pods.items.filter((p) => p.metadata?.ownerReferences?.some((o) => o.name === 'env-missing')),
    ).toEqual([]);
    await putSecret('later');
    await sessions.waitFor('env-missing', readyIs('True', 'SandboxReady'), 60_000);
  });
});

describe('validation by the API server', () => {
  it("refuses a reference to another namespace's Secret", async () => {
    const err = await sessions
      .create('other-ns', {
        env: [
          { name: 'C', valueFrom: { secretKeyRef: { name: 'api', key: 'token', namespace: 'kube-system' } } },
        ],
      })
      .catch((e: unknown) => e);
    expect(refusal(err)).toMatch(/secretKeyRef.namespace is not allowed/);
  });

  it('refuses an entry with both a value and valueFrom, and startup with KubernetesExec', async () => {
    const both = await sessions
      .create('both', {
        env: [{ name: 'C', value: 'x', valueFrom: { secretKeyRef: { name: 'a', key: 'b' } } }],
      })
      .catch((e: unknown) => e);
    expect(refusal(both)).toMatch(/an env entry has a value or valueFrom, not both/);
    const exec = await sessions
      .create('exec-startup', { execTransport: 'KubernetesExec', startup: { command: 'serve' } })
      .catch((e: unknown) => e);
    expect(refusal(exec)).toMatch(/spec.startup needs execTransport Agent/);
  });

  it('takes env and startup next to spec.poolRef', async () => {
    const created = await sessions.create('pooled-shaped', {
      poolRef: { name: 'nopool' },
      env: [{ name: 'A', value: '1' }],
      startup: { command: 'serve' },
    });
    expect(created.spec).toMatchObject({ env: [{ name: 'A', value: '1' }], startup: { command: 'serve' } });
  });
});
