/**
 * Tenant A's session on the hostile-agent image. It is created through the Kubernetes API with
 * the creating key's annotation, as the gateway would create it: the chart's gateway admits only
 * the default sandbox image (gateway.policy.imageAllowlist), and a tenant who controls its agent
 * gets there in other ways (issue 12: e.g. through the session's env). The gateway then serves it
 * to that key like any session of its namespace.
 */
import {
  ANNOTATIONS,
  API_VERSION,
  GROUP,
  KIND,
  PLURAL,
  VERSION,
  type SandboxSession,
} from '@sandbox-platform/api';

import type { KubeClients } from '../../src/framework/index.js';

export const HOSTILE_IMAGE = 'localhost/sandbox-platform/hostile-agent:dev';

/** Creates the session (Agent transport, the hostile image) for the API key `keyId`. */
export async function createHostileSession(
  kube: KubeClients,
  namespace: string,
  name: string,
  keyId: string,
): Promise<void> {
  const body: SandboxSession = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace, annotations: { [ANNOTATIONS.createdByKey]: keyId } },
    spec: { image: HOSTILE_IMAGE, idleTimeoutSeconds: 900 },
  };
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: PLURAL,
    body,
  });
}
