/**
 * Helpers of the tenancy e2e specs (issue 25): a tenant that has only the built-in `edit` role in
 * its namespace (kubectl impersonation), and "planted" Pods that a tenant creates to pose as the
 * child of another tenant's session while recording every connection they get.
 */
import { randomBytes } from 'node:crypto';

import * as k8s from '@kubernetes/client-node';
import { AGENT_PORT, LABELS, MANAGER_NAME, SANDBOX_COMPONENT } from '@sandbox-platform/api';

import { isNotFound, kubectl, type KubeClients, type KubectlResult } from '../../src/framework/index.js';
import { AGENT_IMAGE } from '../isolation/support.js';

/** A user name for impersonation that is unique per run. */
export const tenantUser = (prefix: string): string => `e2e-${prefix}-${randomBytes(3).toString('hex')}`;

/**
 * Gives `user` the built-in `edit` ClusterRole in `namespace` (a RoleBinding), as a platform team
 * onboarding a tenant would (docs/tenants.md). Returns a function that removes it.
 */
export async function grantEdit(
  kube: KubeClients,
  namespace: string,
  user: string,
): Promise<() => Promise<void>> {
  const rbac = kube.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  const name = `${user}-edit`;
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    },
  });
  return async () => {
    try {
      await rbac.deleteNamespacedRoleBinding({ namespace, name });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  };
}

/** kubectl as an impersonated user (who is in system:authenticated only). */
export function kubectlAs(user: string, args: string[], input?: string): Promise<KubectlResult> {
  return kubectl(['--as', user, '--as-group', 'system:authenticated', ...args], { input });
}

/**
 * A recording server (python3 of the sandbox image, deaf to SIGTERM): prints `CONNECT <peer>` for every TCP
 * connection it accepts (its readiness probe is an exec of `test -f`, so the kubelet never connects) and `REQUEST <method> <path>` for every HTTP request, then answers 200 {}
 * so that a caller that was fooled goes on talking to it.
 */
const RECORDER = `
import http.server, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
class H(http.server.BaseHTTPRequestHandler):
    def handle_one_request(self):
        super().handle_one_request()
    def _any(self):
        print("REQUEST", self.command, self.path, "auth=" + ("yes" if self.headers.get("authorization") else "no"), flush=True)
        n = int(self.headers.get("content-length") or 0)
        if n: self.rfile.read(min(n, 1 << 20))
        self.send_response(200); self.send_header("content-type", "application/json"); self.end_headers(); self.wfile.write(b"{}")
    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any
    def log_message(self, *a): pass
class S(http.server.ThreadingHTTPServer):
    def verify_request(self, request, client_address):
        print("CONNECT", client_address[0], flush=True)
        return True
srv = S(("", int(sys.argv[1])), H)
open("/tmp/ready", "w").close()
print("LISTENING", flush=True)
srv.serve_forever()
`;

/** How a planted Pod poses as a session's child. */
export interface PlantOptions {
  /** Namespace the Pod is created in (the attacker's). */
  namespace: string;
  name: string;
  /** The victim's identity, as the attacker learned it (`kubectl get sbs -o yaml` elsewhere, or a leak). */
  victim: { name: string; uid: string };
  /** apiVersion written into the controller reference. */
  apiVersion: string;
  /** Extra labels (e.g. the pool label). */
  labels?: Record<string, string>;
  /** Never Ready (its readiness probe always fails). */
  neverReady?: boolean;
}

/** The planted Pod: our labels, a controller reference to the victim, a recorder on the agent port. */
export function plantedPod(o: PlantOptions): k8s.V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: o.name,
      namespace: o.namespace,
      labels: {
        [LABELS.managedBy]: MANAGER_NAME,
        [LABELS.session]: o.victim.name,
        [LABELS.component]: SANDBOX_COMPONENT,
        ...o.labels,
      },
      ownerReferences: [
        {
          apiVersion: o.apiVersion,
          kind: 'SandboxSession',
          name: o.victim.name,
          uid: o.victim.uid,
          controller: true,
          blockOwnerDeletion: false,
        },
      ],
    },
    spec: {
      automountServiceAccountToken: false,
      // As an attacker would: the Pod outlives a deletion (the garbage collector deletes a Pod whose
      // owner reference names no object of its namespace) by ignoring SIGTERM for 5 minutes.
      terminationGracePeriodSeconds: 300,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'sandbox',
          image: AGENT_IMAGE,
          imagePullPolicy: 'IfNotPresent',
          command: ['python3', '-c', RECORDER, String(AGENT_PORT)],
          ports: [{ name: 'agent', containerPort: AGENT_PORT }],
          readinessProbe: o.neverReady
            ? { exec: { command: ['false'] }, periodSeconds: 2 }
            : { exec: { command: ['test', '-f', '/tmp/ready'] }, periodSeconds: 1 },
          resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            runAsNonRoot: true,
          },
        },
      ],
    },
  };
}

/** The lines the recorder of a Pod printed besides its start line (connections and requests). */
export async function recorded(core: k8s.CoreV1Api, namespace: string, name: string): Promise<string[]> {
  const log = await core.readNamespacedPodLog({ namespace, name, container: 'sandbox' });
  return String(log)
    .split('\n')
    .filter((l) => l.startsWith('CONNECT') || l.startsWith('REQUEST'));
}
