/**
 * Helpers of the snapshot e2e specs (docs/snapshots.md): the e2e tenant's gateway clients, custom
 * objects (snapshots, sessions), a workspace with every kind of entry the issue names and its
 * description as seen from inside a session (find + sha256sum: types, modes, sizes, mtimes,
 * link targets, content), and the local object store (localkube's versitygw: its credentials in
 * .localkube/s3, read only by these specs on the local cluster).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  CONDITIONS,
  GROUP,
  SNAPSHOT_PLURAL,
  VERSION,
  WORKSPACE_VERIFIED,
  snapshotPrefix,
  type SandboxSession,
  type SandboxSnapshot,
} from '@sandbox-platform/api';

import { S3Client } from '../../../operator/src/snapshot/s3-client.js';
import { SandboxClient } from '../../../sdk/typescript/src/index.js';
import { isNotFound, kubeClients } from '../../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { namespaceOf } from '../isolation/support.js';
import { readSession } from '../support/custom-objects.js';

export const NS = namespaceOf('e2e');
export const OTHER_NS = namespaceOf('other');
export const kube = kubeClients();
export const READY_MS = 240_000;

function client(apiKey: string | undefined, namespace: string): SandboxClient {
  const baseUrl = process.env.E2E_GATEWAY_URL;
  if (!baseUrl || !apiKey) throw new Error('needs E2E_GATEWAY_URL and the API keys (make platform-up)');
  return new SandboxClient({ baseUrl, apiKey, namespace, timeoutMs: 240_000 });
}

/** The e2e tenant's client, and the other tenant's. */
export const sbx = client(process.env.E2E_GATEWAY_API_KEY, NS);
export const other = client(process.env.E2E_OTHER_API_KEY, OTHER_NS);

export const session = (name: string, ns = NS): Promise<SandboxSession | undefined> =>
  readSession(kube, ns, name);

/** A snapshot through the Kubernetes API, or undefined. */
export async function readSnapshot(name: string, ns = NS): Promise<SandboxSnapshot | undefined> {
  try {
    return (await kube.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: SNAPSHOT_PLURAL,
      namespace: ns,
      name,
    })) as SandboxSnapshot;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export const condition = (s: SandboxSession | undefined, type: string) =>
  s?.status?.conditions?.find((c) => c.type === type);

/** Waits until the session's Ready or WorkspaceVerified condition has `reason`. */
export async function waitCondition(
  name: string,
  type: string,
  reason: string,
  ns = NS,
): Promise<SandboxSession> {
  return (await waitFor(
    () => session(name, ns),
    predicate(`${name} ${type} reason ${reason}`, (s) => condition(s, type)?.reason === reason),
    { timeoutMs: READY_MS, intervalMs: 500 },
  ))!;
}

/** Waits until a snapshot's phase is `phase` (Ready or Failed). */
export async function waitSnapshotPhase(name: string, phase: string): Promise<SandboxSnapshot> {
  return (await waitFor(
    () => readSnapshot(name),
    predicate(`snapshot ${name} ${phase}`, (s) => s?.status?.phase === phase),
    { timeoutMs: READY_MS, intervalMs: 500 },
  ))!;
}

export const ready = (s: SandboxSession | undefined): boolean =>
  condition(s, CONDITIONS.ready)?.status === 'True';
export const verified = (s: SandboxSession | undefined) => condition(s, WORKSPACE_VERIFIED);

/** Runs a command in a session through the gateway (waiting for Ready); fails on a non-zero exit. */
export async function run(name: string, command: string, c: SandboxClient = sbx): Promise<string> {
  const r = await c.exec(name, { command, timeoutSeconds: 240, waitSeconds: 120 });
  if (r.exitCode !== 0)
    throw new Error(`exit ${r.exitCode} of ${command.slice(0, 80)}: ${r.stderr.slice(0, 500)}`);
  return r.stdout;
}

/**
 * The workspace the issue names: text files, a binary of `binaryMiB` MiB, empty directories,
 * symlinks (a relative one, a dangling one, one to /etc/passwd outside the workspace), modes, and
 * mtimes set to fixed times.
 */
export function buildWorkspaceScript(binaryMiB: number): string {
  return [
    'set -e; cd /workspace',
    'mkdir -p src/lib empty/deeper/still locked',
    'printf "alpha\\n" > src/lib/a.txt; printf "#!/bin/sh\\necho hi\\n" > src/run.sh; chmod 750 src/run.sh',
    'printf "secret\\n" > src/secret.txt; chmod 600 src/secret.txt',
    'printf "read only\\n" > ro.txt; chmod 444 ro.txt',
    'printf "inside\\n" > locked/inside.txt; chmod 711 locked',
    `head -c ${binaryMiB}M /dev/urandom > blob.bin`,
    'ln -s /etc/passwd escape; ln -s src/lib lib-link; ln -s does/not/exist dangling',
    'printf "é\\n" > "naïve name.txt"',
    'TZ=UTC touch -h -d "2021-02-03 04:05:06" src/lib/a.txt escape empty/deeper/still',
    'TZ=UTC touch -d "2020-01-02 03:04:05" blob.bin src/run.sh',
  ].join('; ');
}

/**
 * The workspace as seen from inside: one line per entry (type, mode, size of files, mtime in
 * seconds, path, link target) and the sha256 of every regular file, sorted. Symlinks are
 * described, never followed (find -P; sha256sum only of regular files).
 */
export const DESCRIBE =
  "cd /workspace && find . -mindepth 1 -not -path './.bash_history' -printf '%y %m %s %Ts %p -> %l\\n' | " +
  'awk \'$1 == "d" || $1 == "l" { $3 = "-" } { print }\' | sort && find . -type f -not -path \'./.bash_history\' -print0 | sort -z | xargs -0 sha256sum';

/** The local object store (localkube's versitygw) with the credentials localkube generated. */
export function localStore(): S3Client {
  const dir = join(process.env.LOCALKUBE_DIR ?? join(import.meta.dirname, '../../../.localkube'), 's3');
  const read = (f: string): string => readFileSync(join(dir, f), 'utf8').trim();
  return new S3Client({
    endpoint: read('endpoint'),
    bucket: 'sandbox-snapshots',
    region: 'us-east-1',
    credentials: { accessKeyId: read('access-key-id'), secretAccessKey: read('secret-access-key') },
    timeoutMs: 10_000,
  });
}

/** The keys of a snapshot's objects in the bucket. */
export async function objectsOf(s: SandboxSnapshot): Promise<string[]> {
  return localStore().list(snapshotPrefix(s.metadata.namespace ?? NS, s.metadata.uid ?? 'none'));
}

/** The pid of localkube's versitygw (run/versitygw.pid). */
export function objectStorePid(): number {
  const dir = process.env.LOCALKUBE_DIR ?? join(import.meta.dirname, '../../../.localkube');
  return Number(readFileSync(join(dir, 'run', 'versitygw.pid'), 'utf8').trim());
}

/** A unique name with a readable prefix (DNS label). */
export function unique(prefix: string): string {
  return `${prefix}-${Date.now().toString(36).slice(-5)}${Math.floor(Math.random() * 1296).toString(36)}`;
}
