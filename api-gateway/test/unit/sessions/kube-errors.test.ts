/**
 * The admission policy decides what a sandbox may be (ADR 0028); the gateway answers its refusal of
 * a create as 403 policy-violation carrying the policy's message, and tells it apart from the
 * gateway's own RBAC failing (500, logged) and a ResourceQuota (quota-exceeded). The messages are
 * the API server's own wording (k8s.io/apiserver policy/validating/dispatcher.go; the real
 * refusal is shown by test-e2e/test/integration/control-plane/sandbox-policy.test.ts).
 */
import { afterEach, describe, expect, it } from '@jest/globals';

import { ProblemError } from '../../../src/errors.js';
import { admissionRefusal, kubeFailure } from '../../../src/sessions/kube-errors.js';
import { KEYS, auth, buildTestApp, type TestApp } from '../../helpers/app.js';
import { expectProblem } from '../../helpers/problem.js';

const RULE =
  "spec.image registry.invalid/miner/xmrig:latest is not allowed in namespace team-a by the platform's image policy (chart value policy.images / policy.namespaces.team-a.images, Helm release sandbox in sandbox-system); allowed: localhost/sandbox-platform/sandbox-agent:dev";
const VAP = `sandboxsessions.sandbox.dev "x" is forbidden: ValidatingAdmissionPolicy 'sandbox-sandbox-platform-sandbox-policy' with binding 'sandbox-sandbox-platform-sandbox-policy-team-a' denied request: ${RULE}`;
const RBAC =
  'sandboxsessions.sandbox.dev is forbidden: User "system:serviceaccount:sandbox-system:sandbox-sandbox-platform-gateway" cannot create resource "sandboxsessions" in API group "sandbox.dev" in the namespace "team-a"';

const apiError = (code: number, message: string): Error =>
  Object.assign(new Error(`HTTP ${code}`), {
    code,
    body: JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'Forbidden', message, code }),
  });

describe('admissionRefusal', () => {
  it('reads the policy and its message out of a ValidatingAdmissionPolicy denial', () => {
    expect(admissionRefusal(VAP)).toEqual({
      policy: 'sandbox-sandbox-platform-sandbox-policy',
      message: RULE,
    });
  });

  it('and out of a webhook denial', () => {
    const msg =
      'pods "p" is forbidden: admission webhook "validation.gatekeeper.sh" denied the request: [no-runc] no';
    expect(admissionRefusal(msg)).toEqual({ policy: 'validation.gatekeeper.sh', message: '[no-runc] no' });
  });

  it('is undefined for RBAC, quota and other messages', () => {
    expect(admissionRefusal(RBAC)).toBeUndefined();
    expect(
      admissionRefusal('sandboxsessions.sandbox.dev "x" is forbidden: exceeded quota: q'),
    ).toBeUndefined();
    expect(admissionRefusal(undefined)).toBeUndefined();
  });
});

describe('kubeFailure of a conflict', () => {
  it('a 409 (a snapshot name taken) is the conflict problem with the API server message, not a 500', () => {
    const msg = 'sandboxsnapshots.sandbox.dev "s1" already exists';
    const p = kubeFailure(apiError(409, msg), 'create snapshot') as ProblemError;
    expect(p).toBeInstanceOf(ProblemError);
    expect([p.slug, p.status, p.detail]).toEqual(['conflict', 409, `create snapshot: ${msg}`]);
  });
});

describe('kubeFailure of an admission refusal', () => {
  it('a 403 denial is policy-violation with status 403 and the policy message, its name an extension', () => {
    const p = kubeFailure(apiError(403, VAP), 'create session') as ProblemError;
    expect(p).toBeInstanceOf(ProblemError);
    expect([p.slug, p.status, p.detail]).toEqual(['policy-violation', 403, RULE]);
    expect(p.toBody()).toMatchObject({
      type: 'https://sandbox.dev/problems/policy-violation',
      status: 403,
      detail: RULE,
      policy: 'sandbox-sandbox-platform-sandbox-policy',
    });
  });

  it('a policy without reason answers 422: policy-violation keeps that status', () => {
    const p = kubeFailure(apiError(422, VAP), 'create session') as ProblemError;
    expect([p.slug, p.status, p.toBody().status]).toEqual(['policy-violation', 422, 422]);
  });

  it('an RBAC 403 stays an internal error (the gateway misconfigured, not the caller)', () => {
    const e = kubeFailure(apiError(403, RBAC), 'create session');
    expect(e).not.toBeInstanceOf(ProblemError);
  });
});

describe('POST /v1/sessions refused at admission', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.app.close();
  });

  it('answers 403 policy-violation with the same message kubectl shows, and passes any image to the API server', async () => {
    t = await buildTestApp();
    t.store.createError = kubeFailure(apiError(403, VAP), 'create session');
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: auth(KEYS.a),
      payload: { name: 'x', image: 'registry.invalid/miner/xmrig:latest' },
    });
    const body = expectProblem(res, 403, 'policy-violation');
    expect(body.detail).toBe(RULE);
    expect(t.store.get('team-a', 'x')).toBeUndefined();
  });

  it('and an image the policy allows is created as asked (the gateway no longer filters images)', async () => {
    t = await buildTestApp();
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: auth(KEYS.a),
      payload: { name: 'y', image: 'registry.example.com/team/tool:1' },
    });
    expect(res.statusCode).toBe(201);
    expect(t.store.get('team-a', 'y')?.spec.image).toBe('registry.example.com/team/tool:1');
  });
});
