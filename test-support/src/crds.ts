import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import * as k8s from '@kubernetes/client-node';

import { REPO_ROOT } from './localkube.js';
import { predicate, waitFor } from './wait-for.js';

/** The project's CRDs: crds/*.yaml, the API's source of truth. */
export const CRDS_DIR = join(REPO_ROOT, 'crds');

/** The field manager the harness applies with. */
const FIELD_MANAGER = 'sandbox-platform-test-harness';

type Crd = k8s.V1CustomResourceDefinition;

/** Reads every CustomResourceDefinition document from the *.yaml files of a directory. */
export function readCrds(dir: string = CRDS_DIR): Crd[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.yaml') || file.endsWith('.yml'))
    .flatMap((file) => k8s.loadAllYaml(readFileSync(join(dir, file), 'utf8')) as k8s.KubernetesObject[])
    .filter((doc): doc is Crd => doc?.kind === 'CustomResourceDefinition');
}

/** true when the CRD's Established condition is True (its API is served). */
export function isEstablished(crd: Crd): boolean {
  return (crd.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
}

/**
 * Server-side applies every CRD of `dir` and waits until each is Established, so tests can use
 * the custom resources right away. Returns the CRD names.
 */
export async function applyCrds(
  kc: k8s.KubeConfig,
  dir: string = CRDS_DIR,
  timeoutMs = 60_000,
): Promise<string[]> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const crds = readCrds(dir);
  if (crds.length === 0) throw new Error(`no CustomResourceDefinition found in ${dir}/*.yaml`);
  const names: string[] = [];
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '<unnamed>';
    try {
      await objects.patch(crd, undefined, undefined, FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply);
    } catch (err) {
      throw new Error(`apply CRD ${name}`, { cause: err });
    }
    names.push(name);
  }
  for (const name of names) {
    await waitFor(
      () => ext.readCustomResourceDefinition({ name }),
      predicate(`CRD ${name} Established`, isEstablished),
      {
        timeoutMs,
      },
    );
  }
  return names;
}
