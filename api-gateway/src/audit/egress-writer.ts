/**
 * Writes a session's spec.egress (PUT /v1/sessions/{name}/egress): one JSON patch replacing the
 * whole field, through the API server, so the sandbox policy at admission (templates/
 * sandbox-policy.yaml) and the CRD's validation judge it like any other write; a refusal becomes
 * 403/422 problem (sessions/kube-errors.ts).
 */
import * as k8s from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';

import { apiStatus, kubeFailure } from '../sessions/kube-errors.js';

/** spec.egress as the API takes it. */
export type EgressSpec = NonNullable<SandboxSession['spec']['egress']>;

/** Replaces spec.egress; undefined when the session does not exist. */
export interface EgressRuleWriter {
  replace(namespace: string, name: string, egress: EgressSpec): Promise<SandboxSession | undefined>;
}

/** The writer over the API server. */
export class KubeEgressWriter implements EgressRuleWriter {
  private readonly api: k8s.CustomObjectsApi;

  constructor(kubeConfig: k8s.KubeConfig) {
    this.api = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  }

  async replace(namespace: string, name: string, egress: EgressSpec): Promise<SandboxSession | undefined> {
    try {
      return (await this.api.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
          body: [{ op: 'add', path: '/spec/egress', value: egress }],
          fieldManager: 'sandbox-api-gateway',
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
      )) as SandboxSession;
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw kubeFailure(err, 'set session egress');
    }
  }
}
