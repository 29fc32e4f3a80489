/**
 * e2e (issue 25): the gateway dials only a Pod it can tie to the session. Whoever can write
 * `sandboxsessions/status` (a Role with `*` is enough) once pointed session A's `status.podIP` at
 * tenant B's Pod and read B's files through A's port route. Here the operator is stopped (so it
 * does not repair the status at once), A's status is forged to B's Pod IP (and, second case, B's
 * Pod name too), and A's key asks for a file through A's port route and runs an exec: both are
 * refused with a 503 problem, and B's server, which records every connection, records none.
 * A positive control first shows that B's server answers and records through B's own route.
 *
 * Needs the platform on the local cluster or any cluster (make platform-up); it scales the
 * operator Deployment to 0 for the forged part and back afterwards.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';

import { kubeClients } from '../../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { deleteSession, gatewayClient, namespaceOf } from '../isolation/support.js';
import { readSession } from '../support/custom-objects.js';

const NS_A = namespaceOf('e2e');
const NS_B = namespaceOf('other');
const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
const OPERATOR = `${RELEASE}-sandbox-platform-operator`;
const BASE = process.env.E2E_GATEWAY_URL ?? '';
const KEY = { a: process.env.E2E_GATEWAY_API_KEY ?? '', b: process.env.E2E_OTHER_API_KEY ?? '' };
const READY_MS = 180_000;
const PORT = 8000;
const kube = kubeClients();
const apps = kube.kc.makeApiClient(k8s.AppsV1Api);
const suffix = randomBytes(3).toString('hex');
const A = `forger-${suffix}`;
const B = `private-${suffix}`;

/** A server in B's sandbox that logs each connection, serving a private file. */
const SERVER = [
  'mkdir -p /workspace/www && echo "secret-of-b" > /workspace/www/private.txt',
  `cat > /workspace/rec.py <<'PY'`,
  'import http.server, functools',
  'class S(http.server.ThreadingHTTPServer):',
  '    def verify_request(self, req, addr):',
  '        open("/workspace/rec.log", "a").write("CONNECT %s\\n" % addr[0]); return True',
  'h = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/workspace/www")',
  `S(("", ${PORT}), h).serve_forever()`,
  'PY',
  'touch /workspace/rec.log',
  'nohup python3 /workspace/rec.py >/dev/null 2>&1 &',
  `for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/${PORT}) 2>/dev/null && break; sleep 0.1; done`,
  ': > /workspace/rec.log',
].join('\n');

function portRoute(key: string, ns: string, name: string, path: string): Promise<Response> {
  return fetch(`${BASE}/v1/sessions/${name}/ports/${PORT}/${path}?namespace=${ns}`, {
    headers: { authorization: `Bearer ${key}` },
  });
}

async function connections(): Promise<string[]> {
  const r = await gatewayClient('other').exec(B, { command: 'cat /workspace/rec.log' });
  return r.stdout.split('\n').filter(Boolean);
}

async function scaleOperator(replicas: number): Promise<void> {
  await apps.patchNamespacedDeploymentScale(
    { namespace: PLATFORM_NS, name: OPERATOR, body: { spec: { replicas } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

async function forgeStatus(status: Record<string, string>): Promise<void> {
  await kube.custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, plural: PLURAL, namespace: NS_A, name: A, body: { status } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

describe('a forged status.podIP does not reach another tenant Pod', () => {
  let podB: { name: string; ip: string };
  let operatorReplicas = 2;

  beforeAll(async () => {
    const a = gatewayClient('e2e');
    const b = gatewayClient('other');
    await Promise.all([a.createSession({ name: A }), b.createSession({ name: B })]);
    await Promise.all([
      a.waitUntilReady(A, { timeoutMs: READY_MS }),
      b.waitUntilReady(B, { timeoutMs: READY_MS }),
    ]);
    const started = await b.exec(B, { command: SERVER, timeoutSeconds: 30 });
    expect(started.exitCode).toBe(0);
    const s = (await readSession(kube, NS_B, B)) as SandboxSession;
    podB = { name: s.status!.podName!, ip: s.status!.podIP! };
    const dep = await apps.readNamespacedDeployment({ namespace: PLATFORM_NS, name: OPERATOR });
    operatorReplicas = dep.spec?.replicas ?? 2;
  }, READY_MS * 2);

  afterAll(async () => {
    await scaleOperator(operatorReplicas);
    await waitFor(
      () => apps.readNamespacedDeployment({ namespace: PLATFORM_NS, name: OPERATOR }),
      predicate('operator replicas ready again', (d) => (d.status?.readyReplicas ?? 0) >= operatorReplicas),
      { timeoutMs: READY_MS, intervalMs: 250 },
    );
    await deleteSession(kube, NS_A, A);
    await deleteSession(kube, NS_B, B);
  }, READY_MS + 30_000);

  it('positive control: B reads its own file through its route, and the server records it', async () => {
    const res = await portRoute(KEY.b, NS_B, B, 'private.txt');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('secret-of-b\n');
    expect((await connections()).length).toBeGreaterThan(0);
    await gatewayClient('other').exec(B, { command: ': > /workspace/rec.log' });
  });

  it.each([
    ['podIP only', (): Record<string, string> => ({ podIP: podB.ip })],
    ['podIP and podName', (): Record<string, string> => ({ podIP: podB.ip, podName: podB.name })],
  ])(
    'A with a status forged to B (%s) is refused and B records no connection',
    async (_what, forged) => {
      await scaleOperator(0);
      await waitFor(
        () =>
          kube.core.listNamespacedPod({
            namespace: PLATFORM_NS,
            labelSelector: 'app.kubernetes.io/component=operator',
          }),
        predicate('no operator Pod left', (l) => l.items.length === 0),
        { timeoutMs: 60_000, intervalMs: 500 },
      );
      await forgeStatus(forged());
      // Before the gateway's informer has the forged status, A's route reaches A's own Pod, where
      // nothing listens on the port (a 502); afterwards it is refused (503), or, were the check
      // missing, B's file comes back (200).
      let res: Response | undefined;
      let body = '';
      const deadline = Date.now() + 30_000;
      do {
        res = await portRoute(KEY.a, NS_A, A, 'private.txt');
        body = await res.text();
        if (res.status === 503 || res.status === 200) break;
        await new Promise((r) => setTimeout(r, 200));
      } while (Date.now() < deadline);
      expect(body).not.toContain('secret-of-b');
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      let execStatus = 0;
      try {
        await gatewayClient('e2e').exec(A, { command: 'id', waitSeconds: 1 }, { timeoutMs: 30_000 });
      } catch (e) {
        execStatus = (e as { status?: number }).status ?? -1;
        if (execStatus === -1) process.stdout.write(`exec as A: ${String(e)}\n`);
      }
      expect(execStatus).toBe(503);
      expect(await connections()).toEqual([]);
      await scaleOperator(operatorReplicas);
    },
    READY_MS,
  );
});
