/**
 * `make bench-snapshot` (issue 26), side by side in one run on the local cluster:
 *
 * 1. Snapshot throughput (printed with it: the sandbox runtime's own read floors inside the Pod,
 *    `tar | wc -c` (reading alone), `tar | sha256sum` (reading and hashing, as a snapshot must)
 *    and `tar` to a TCP socket read on this host (reading and sending, as a snapshot must)): a
 *    session whose /workspace holds `--files` random files of together `--mib` MiB (default 10,000 files, 1 GiB) is snapshotted through the gateway (timed from the
 *    POST to Ready seen, polled every 100 ms) and, alternating with it, the floor: `tar | zstd -1`
 *    of the same tree, read on this host from the Pod's emptyDir directory, cut into parts of the
 *    operator's part size and PUT to the same S3 server with the operator's own S3 client, the
 *    same number of parts in flight. Goal: ours >= 0.7x the floor's throughput (bytes of the tree
 *    per second).
 * 2. Fork to first output: a session with a `--fork-mib` MiB workspace (default 100) is snapshotted
 *    once (untimed); then, alternating, a cold session and a session with
 *    spec.workspace.fromSnapshot, each created as a SandboxSession object and timed from the create
 *    to the first stdout chunk of a streamed `echo first` through the gateway (which waits for
 *    Ready; a restored session is Ready once its workspace is verified). Goal: fork p50 <= 2x cold.
 *    Beside it, the runtime's floors for a restore in the restored Pod: `tar -x` of a local archive
 *    (writeFloor) and `tar -x` reading the same archive from a TCP socket (receiveFloor), each
 *    added to the cold p50.
 * 3. What digest verification costs a restore: verification cannot be switched off (the agent
 *    hashes what it writes, in the same pass; the operator checks each part's sha256), so its
 *    work is measured directly: sha256 over the restored bytes in the Pod (same runtime) plus on
 *    this host, over the restore's own time (fork p50 - cold p50). Goal: <= 20%. Printed too, as
 *    a loose upper bound: the digest alone (`GET /v1/archive/digest` on the restored Pod: read
 *    and hash the tree again, nothing written).
 *
 * Needs `make platform-up` with the local S3 server (platform.env, .localkube/s3) and a node whose
 * kubelet directory is on this host (.localkube/kubelet): the floor reads the emptyDir there.
 *   --rounds N (default 3)  --files N  --mib N  --fork-mib N  --samples N (default 8)
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import {
  GROUP,
  LABELS,
  PLURAL,
  TOKEN_SECRET_KEY,
  VERSION,
  secretName,
  type SandboxSession,
} from '@sandbox-platform/api';

import { S3Client } from '../../operator/src/snapshot/s3-client.js';
import { firstOutput } from './first-output.js';
import { SandboxClient } from '../../sdk/typescript/src/index.js';
import { kubeClients, REPO_ROOT } from '../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';

// Not imported from specs/isolation/support.ts: that module pulls in @jest/globals (its notRun),
// which a bench bundle run by plain node cannot load.
const uniqueName = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    files: { type: 'string', default: '10000' },
    mib: { type: 'string', default: '1024' },
    'fork-mib': { type: 'string', default: '100' },
    samples: { type: 'string', default: '8' },
    'part-mib': { type: 'string', default: '8' },
    'parts-in-flight': { type: 'string', default: '2' },
    bucket: { type: 'string', default: 'sandbox-snapshots' },
  },
});
const ROUNDS = Number(values.rounds);
const FILES = Number(values.files);
const MIB = Number(values.mib);
const FORK_MIB = Number(values['fork-mib']);
const SAMPLES = Number(values.samples);
const PART_BYTES = Number(values['part-mib']) * 1024 * 1024;
const IN_FLIGHT = Number(values['parts-in-flight']);

const ns = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
const kube = kubeClients();
const baseUrl = process.env.E2E_GATEWAY_URL;
const apiKey = process.env.E2E_GATEWAY_API_KEY;
if (!baseUrl || !apiKey) throw new Error('needs E2E_GATEWAY_URL and E2E_GATEWAY_API_KEY (make platform-up)');
const sbx = new SandboxClient({ baseUrl, apiKey, namespace: ns, timeoutMs: 600_000, retry: { retries: 5 } });
const S3_DIR = join(REPO_ROOT, '.localkube/s3');
const KUBELET_DIR = join(REPO_ROOT, '.localkube/kubelet');

const since = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;
const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
const load = (): string =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const median = (xs: number[]): number =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

/** A SandboxSession object, as `kubectl apply` would create it. */
async function createSessionObject(
  name: string,
  workspace: Record<string, unknown>,
): Promise<SandboxSession> {
  return (await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural: PLURAL,
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxSession',
      metadata: { name, namespace: ns },
      spec: { workspace, idleTimeoutSeconds: 1800 },
    },
  })) as SandboxSession;
}

async function podOf(name: string): Promise<{ uid: string; ip: string; name: string } | undefined> {
  const list = await kube.core.listNamespacedPod({
    namespace: ns,
    labelSelector: `${LABELS.session}=${name}`,
  });
  const pod = list.items.find((p) => !p.metadata?.deletionTimestamp && p.status?.podIP);
  return pod ? { uid: pod.metadata!.uid!, ip: pod.status!.podIP!, name: pod.metadata!.name! } : undefined;
}

async function noPod(name: string): Promise<void> {
  await waitFor(
    () => kube.core.listNamespacedPod({ namespace: ns, labelSelector: `${LABELS.session}=${name}` }),
    predicate(`no Pod of ${name}`, (l) => l.items.length === 0),
    { timeoutMs: 180_000, intervalMs: 250 },
  );
}

/** Random files of together `mib` MiB, `files` of them in directories of 100, written by node in the Pod. */
async function fill(name: string, files: number, mib: number): Promise<void> {
  const script =
    `const fs=require('fs'),c=require('crypto');const n=${files},total=${mib}*1048576;` +
    `const each=Math.floor(total/n);let rest=total-each*n;` +
    `for(let i=0;i<n;i++){const d='/workspace/data/d'+Math.floor(i/100);if(i%100===0)fs.mkdirSync(d,{recursive:true});` +
    `const size=each+(i===n-1?rest:0);fs.writeFileSync(d+'/f'+i,c.randomBytes(size));}`;
  const r = await sbx.exec(name, {
    command: `node -e "${script}" && du -sb /workspace/data`,
    timeoutSeconds: 300,
    waitSeconds: 120,
  });
  if (r.exitCode !== 0) throw new Error(`filling ${name} failed (${r.exitCode}): ${r.stderr}`);
  console.log(`  ${name}: ${r.stdout.trim()}`);
}

async function snapshotOnce(session: string): Promise<{ ms: number; bytes: number; name: string }> {
  const name = uniqueName('bench-snap');
  const t0 = process.hrtime.bigint();
  await sbx.snapshot(session, { name });
  for (;;) {
    const s = await sbx.getSnapshot(name);
    if (s.ready) return { ms: since(t0), bytes: s.sizeBytes ?? 0, name };
    if (s.phase === 'Failed') throw new Error(`snapshot ${name} failed: ${s.reason} ${s.message}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function deleteSnapshot(name: string): Promise<void> {
  await sbx.deleteSnapshot(name).catch(() => undefined);
  await waitFor(
    () => sbx.listSnapshots(),
    predicate(`snapshot ${name} gone`, (all) => !all.some((s) => s.name === name)),
    { timeoutMs: 120_000, intervalMs: 250 },
  );
}

function store(): S3Client {
  const read = (f: string): string => readFileSync(join(S3_DIR, f), 'utf8').trim();
  if (!existsSync(join(S3_DIR, 'endpoint'))) throw new Error(`no local S3 server (${S3_DIR}/endpoint)`);
  return new S3Client({
    endpoint: read('endpoint'),
    bucket: values.bucket,
    region: 'us-east-1',
    credentials: { accessKeyId: read('access-key-id'), secretAccessKey: read('secret-access-key') },
    timeoutMs: 30_000,
  });
}

/** The floor: tar | zstd -1 of `dir`, cut into parts PUT to the store, IN_FLIGHT at once. */
async function floorOnce(s3: S3Client, dir: string): Promise<{ ms: number; stored: number; keys: string[] }> {
  const prefix = `bench-floor/${randomBytes(4).toString('hex')}`;
  const keys: string[] = [];
  const t0 = process.hrtime.bigint();
  const tar = spawn('sh', ['-c', `tar -C "${dir}" -cf - . | zstd -1 -q -c`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const inFlight = new Set<Promise<void>>();
  let stored = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const put = async (body: Buffer): Promise<void> => {
    const key = `${prefix}/part-${String(keys.length).padStart(6, '0')}`;
    keys.push(key);
    stored += body.length;
    const p = s3.put(key, body, createHash('sha256').update(body).digest('hex'));
    const tracked = p.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
  };
  for await (const chunk of tar.stdout as AsyncIterable<Buffer>) {
    pending.push(chunk);
    pendingBytes += chunk.length;
    while (pendingBytes >= PART_BYTES) {
      const all = Buffer.concat(pending);
      await put(all.subarray(0, PART_BYTES));
      pending = [all.subarray(PART_BYTES)];
      pendingBytes = pending[0]!.length;
    }
  }
  if (pendingBytes > 0) await put(Buffer.concat(pending));
  await Promise.all(inFlight);
  const code = await new Promise<number | null>((r) =>
    tar.exitCode !== null ? r(tar.exitCode) : tar.on('close', r),
  );
  if (code !== 0) throw new Error(`tar | zstd exited ${code}`);
  return { ms: since(t0), stored, keys };
}

/**
 * What verification itself costs a restore of `bytes`: sha256 over them once in the session's
 * Pod (the agent's tree digest hashes what it writes, in the same pass) and once here (the
 * operator checks each downloaded part against the manifest), in 1 MiB and part-size pieces.
 */
async function hashing(name: string, bytes: number): Promise<{ podMs: number; hostMs: number }> {
  const script =
    `const c=require('crypto'),b=c.randomBytes(1048576),n=Math.ceil(${bytes}/1048576);` +
    `const h=c.createHash('sha256');const t=process.hrtime.bigint();for(let i=0;i<n;i++)h.update(b);h.digest();` +
    `console.log(Number(process.hrtime.bigint()-t)/1e6)`;
  const r = await sbx.exec(name, { command: `node -e "${script}"`, timeoutSeconds: 60 });
  if (r.exitCode !== 0) throw new Error(`hashing in ${name} failed (${r.exitCode}): ${r.stderr}`);
  const part = randomBytes(PART_BYTES);
  const t0 = process.hrtime.bigint();
  for (let done = 0; done < bytes; done += PART_BYTES) createHash('sha256').update(part).digest();
  return { podMs: Number(r.stdout.trim()), hostMs: since(t0) };
}

/**
 * The sandbox runtime's floor for reading the tree: `tar` of /workspace/data in the session's Pod
 * (gVisor here) into `sink` (`wc -c`: reading alone; `sha256sum`: reading and hashing), nothing
 * sent anywhere; timed around the exec.
 */
async function readFloor(name: string, sink: 'wc -c' | 'sha256sum'): Promise<number> {
  const t0 = process.hrtime.bigint();
  const r = await sbx.exec(name, {
    command: `tar -cf - -C /workspace data | ${sink} >/dev/null`,
    timeoutSeconds: 300,
  });
  if (r.exitCode !== 0) throw new Error(`tar in ${name} failed (${r.exitCode}): ${r.stderr}`);
  return since(t0);
}

/**
 * The sandbox runtime's floor for writing the tree a restore writes: `tar -x` in the restored
 * session's Pod of an archive of its own /workspace/data (made first, untimed, in the Pod's /tmp)
 * into a new directory of the workspace; timed inside the Pod, then removed.
 */
async function writeFloor(name: string): Promise<number> {
  const prep = await sbx.exec(name, {
    command: 'tar -cf /tmp/.wfloor.tar -C /workspace data',
    timeoutSeconds: 300,
  });
  if (prep.exitCode !== 0) throw new Error(`tar -c in ${name} failed (${prep.exitCode}): ${prep.stderr}`);
  const r = await sbx.exec(name, {
    command:
      's=$(date +%s%N); mkdir /workspace/.wfloor && tar -xf /tmp/.wfloor.tar -C /workspace/.wfloor && ' +
      'e=$(date +%s%N) && echo $(( (e - s) / 1000000 )); rc=$?; rm -rf /workspace/.wfloor /tmp/.wfloor.tar; exit $rc',
    timeoutSeconds: 300,
  });
  if (r.exitCode !== 0) throw new Error(`tar -x in ${name} failed (${r.exitCode}): ${r.stderr}`);
  return Number(r.stdout.trim());
}

/** Port of the receive floor's relay in the Pod (the node reaches any port of its Pods). */
const RELAY_PORT = 9701;

/** A session's Pod and its agent token (from the session Secret), for calls straight to the agent. */
async function agentOf(name: string): Promise<{ ip: string; token: string }> {
  const pod = await podOf(name);
  if (!pod) throw new Error(`${name} has no Pod`);
  const secret = await kube.core.readNamespacedSecret({ namespace: ns, name: secretName(name) });
  return { ip: pod.ip, token: Buffer.from(secret.data![TOKEN_SECRET_KEY]!, 'base64').toString('utf8') };
}

/** `talk` over a new connection to the floors' listener in the Pod, retried until it listens (10 s). */
async function toListener<T>(ip: string, talk: (sock: net.Socket) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await talk(net.connect(RELAY_PORT, ip));
    } catch (err) {
      if (attempt >= 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * The sandbox runtime's floor for what a snapshot does without hashing: `tar -c` of
 * /workspace/data in the session's Pod writing to a TCP socket (its stdout is the socket a Python
 * listener accepted from this host), read to its end here; timed here from the connection to the
 * last byte. It adds to the read floor the send through the runtime's netstack that a snapshot
 * cannot skip.
 */
async function sendFloor(name: string): Promise<number> {
  const pod = await agentOf(name);
  const listener = [
    'import socket, subprocess',
    'l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
    `l.bind(("0.0.0.0", ${RELAY_PORT})); l.listen(1); l.settimeout(60)`,
    'c, _ = l.accept()',
    'rc = subprocess.call(["tar", "-cf", "-", "-C", "/workspace", "data"], stdout=c.fileno())',
    'c.shutdown(socket.SHUT_WR); c.close(); raise SystemExit(rc)',
  ].join('\n');
  const running = sbx.exec(name, { command: `python3 -c '${listener}'`, timeoutSeconds: 300 });
  const read = (): Promise<number> =>
    toListener(
      pod.ip,
      (sock) =>
        new Promise<number>((resolve, reject) => {
          let t0 = 0n;
          let bytes = 0;
          sock.on('connect', () => (t0 = process.hrtime.bigint()));
          sock.on('data', (b: Buffer) => (bytes += b.length));
          sock.on('end', () => (bytes > 0 ? resolve(since(t0)) : reject(new Error('no bytes'))));
          sock.on('error', reject);
        }),
    );
  const [r, ms] = await Promise.all([running, read()]);
  if (r.exitCode !== 0) throw new Error(`send floor in ${name} failed (${r.exitCode}): ${r.stderr}`);
  return ms;
}

/**
 * The sandbox runtime's floor for what a restore does without its checks and hashing: the same
 * archive bytes (the restored Pod's own `GET /v1/archive`, fetched first, untimed) sent over TCP
 * from this host into the Pod, where `tar -x` reads them from the accepted socket as its stdin
 * (a Python listener accepts and starts it) into a new directory of the workspace; timed inside
 * the Pod from the accept to tar's exit (tar's start included), then removed. It adds the network
 * receive through the runtime's netstack that `tar -x` of a local file (writeFloor) leaves out.
 */
async function receiveFloor(name: string): Promise<number> {
  const pod = await agentOf(name);
  const res = await fetch(`http://${pod.ip}:8090/v1/archive`, {
    headers: { authorization: `Bearer ${pod.token}` },
  });
  if (res.status !== 200) throw new Error(`archive of ${name}: ${res.status}`);
  const archive = Buffer.from(await res.arrayBuffer());
  // tar reads the accepted socket itself (its stdin): no relay, no pipe between.
  const relay = [
    'import socket, subprocess, time',
    'l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
    `l.bind(("0.0.0.0", ${RELAY_PORT})); l.listen(1); l.settimeout(60)`,
    'c, _ = l.accept(); t = time.monotonic()',
    'rc = subprocess.call(["tar", "-x", "-C", "/workspace/.rfloor"], stdin=c.fileno())',
    'print(round((time.monotonic() - t) * 1000) if rc == 0 else -rc)',
  ].join('\n');
  const running = sbx.exec(name, {
    command: `mkdir /workspace/.rfloor && python3 -c '${relay}'; rc=$?; rm -rf /workspace/.rfloor; exit $rc`,
    timeoutSeconds: 300,
  });
  const sent = toListener(
    pod.ip,
    (sock) =>
      new Promise<void>((resolve, reject) => {
        sock.on('connect', () => sock.end(archive, () => resolve()));
        sock.on('error', reject);
      }),
  );
  const [r] = await Promise.all([running, sent]);
  const ms = Number(r.stdout.trim());
  if (r.exitCode !== 0 || !(ms > 0))
    throw new Error(`receive floor in ${name} failed (${r.exitCode}): ${r.stdout} ${r.stderr}`);
  return ms;
}

/** The digest alone, on the session's Pod: read and hash /workspace, nothing written. */
async function digestAlone(name: string): Promise<number> {
  const pod = await agentOf(name);
  const t0 = process.hrtime.bigint();
  const res = await fetch(`http://${pod.ip}:8090/v1/archive/digest`, {
    headers: { authorization: `Bearer ${pod.token}` },
  });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`digest of ${name}: ${res.status} ${body.slice(0, 200)}`);
  return since(t0);
}

/**
 * Where a fork's restore went, as the operator's WorkspaceRestored event (the restore's time and
 * its wait for the object store) and the agent's `workspace restored` log line (its time and its
 * wait for the archive's bytes) record it.
 */
async function restoreSplit(name: string): Promise<{
  operatorMs: number;
  storeWaitMs: number;
  agentMs: number;
  agentWaitedMs: number;
  chunks: number;
}> {
  const pod = await podOf(name);
  if (!pod) throw new Error(`${name} has no Pod`);
  // The operator records its Events asynchronously: the session can answer before this one is written.
  const note = await waitFor(
    async () => {
      const events = await kube.core.listNamespacedEvent({
        namespace: ns,
        fieldSelector: `involvedObject.name=${name},reason=WorkspaceRestored`,
      });
      return events.items.map((e) => e.message ?? '').find((m) => / in \d+ ms /.test(m)) ?? '';
    },
    predicate(`the WorkspaceRestored Event of ${name}`, (m: string) => m !== ''),
    { timeoutMs: 15_000, intervalMs: 200 },
  );
  const ev = / in (\d+) ms \((\d+) ms of it waiting for the object store\)/.exec(note);
  const log: string = await kube.core.readNamespacedPodLog({ namespace: ns, name: pod.name });
  const line = log
    .split('\n')
    .filter((l) => l.includes('"workspace restored"'))
    .map((l) => JSON.parse(l) as { durationMs?: number; waitedMs?: number; chunks?: number })
    .at(-1);
  if (!ev || line?.durationMs === undefined)
    throw new Error(
      `${name}: no restore timings (event: ${note.slice(0, 200)}; log line: ${JSON.stringify(line)})`,
    );
  return {
    operatorMs: Number(ev[1]),
    storeWaitMs: Number(ev[2]),
    agentMs: line.durationMs,
    agentWaitedMs: line.waitedMs ?? 0,
    chunks: line.chunks ?? 0,
  };
}

function row(label: string, xs: number[], unit: string, digits = 0): void {
  const sorted = [...xs].sort((a, b) => a - b);
  console.log(
    `  ${label.padEnd(44)} n=${String(xs.length).padEnd(3)} p50 ${quantile(sorted, 0.5).toFixed(digits)} ${unit}` +
      `  (min ${sorted[0]!.toFixed(digits)}, max ${sorted.at(-1)!.toFixed(digits)}; raw ${xs.map((x) => x.toFixed(digits)).join(' ')})`,
  );
}

async function throughput(created: string[], snapshots: string[]): Promise<void> {
  console.log(
    `\n== 1. snapshot of ${MIB} MiB in ${FILES} files vs tar | zstd -1 to the same S3 server (${ROUNDS} rounds; load ${load()})`,
  );
  const big = uniqueName('bench-snapbig');
  created.push(big);
  await createSessionObject(big, { sizeLimit: `${MIB + 512}Mi` });
  await fill(big, FILES, MIB);
  const pod = await podOf(big);
  const dir = join(KUBELET_DIR, 'pods', pod!.uid, 'volumes/kubernetes.io~empty-dir/workspace');
  if (!existsSync(join(dir, 'data'))) throw new Error(`the workspace is not on this host at ${dir}`);
  const s3 = store();
  const ours: number[] = [];
  const floor: number[] = [];
  const inPod: number[] = [];
  const readOnly: number[] = [];
  const sent: number[] = [];
  let treeBytes = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const snap = await snapshotOnce(big);
    snapshots.push(snap.name);
    treeBytes = snap.bytes;
    ours.push(snap.bytes / 1048576 / (snap.ms / 1000));
    console.log(
      `  round ${i + 1}: snapshot ${snap.ms.toFixed(0)} ms for ${snap.bytes} bytes (archive, headers included)`,
    );
    await deleteSnapshot(snap.name);
    const f = await floorOnce(s3, dir);
    floor.push(snap.bytes / 1048576 / (f.ms / 1000));
    console.log(
      `  round ${i + 1}: floor ${f.ms.toFixed(0)} ms, ${f.stored} bytes stored in ${f.keys.length} parts (load ${load()})`,
    );
    for (const k of f.keys) await s3.delete(k);
    const readMs = await readFloor(big, 'sha256sum');
    inPod.push(snap.bytes / 1048576 / (readMs / 1000));
    const readOnlyMs = await readFloor(big, 'wc -c');
    readOnly.push(snap.bytes / 1048576 / (readOnlyMs / 1000));
    const sentMs = await sendFloor(big);
    sent.push(snap.bytes / 1048576 / (sentMs / 1000));
    console.log(
      `  round ${i + 1}: in the Pod, tar | sha256sum ${readMs.toFixed(0)} ms, tar | wc -c ${readOnlyMs.toFixed(0)} ms, tar to a TCP socket ${sentMs.toFixed(0)} ms`,
    );
  }
  row('ours: snapshot through the platform', ours, 'MiB/s', 1);
  row('floor: tar | zstd -1 | S3 (host)', floor, 'MiB/s', 1);
  row('read floor: tar | wc -c in the Pod', readOnly, 'MiB/s', 1);
  row('read+hash floor: tar | sha256sum in the Pod', inPod, 'MiB/s', 1);
  row('read+send floor: tar to a TCP socket', sent, 'MiB/s', 1);
  const ratio = median(ours) / median(floor);
  console.log(`  ours / floor (p50 throughput over ${treeBytes} bytes): ${ratio.toFixed(2)}x (goal >= 0.7x)`);
  console.log(
    `  ours / the Pod's read floor: ${(median(ours) / median(readOnly)).toFixed(2)}x, read+hash floor: ` +
      `${(median(ours) / median(inPod)).toFixed(2)}x (the sandbox runtime reads the tree at that speed before ` +
      `anything is sent; the host floor reads it without the runtime)`,
  );
  console.log(
    `  ours / the Pod's read+send floor: ${(median(ours) / median(sent)).toFixed(2)}x (reading the tree and sending ` +
      `it out of the runtime, as a snapshot must, without hashing)`,
  );
  await sbx.deleteSession(big).catch(() => undefined);
}

async function fork(created: string[], snapshots: string[]): Promise<void> {
  console.log(
    `\n== 2. fork (fromSnapshot, ${FORK_MIB} MiB) vs cold create, to first output (${SAMPLES} samples each, alternating; load ${load()})`,
  );
  const source = uniqueName('bench-forksrc');
  created.push(source);
  await createSessionObject(source, {});
  await fill(source, Math.max(1, Math.round((FILES * FORK_MIB) / MIB)), FORK_MIB);
  const snap = await snapshotOnce(source);
  snapshots.push(snap.name);
  console.log(`  base snapshot ${snap.name}: ${snap.bytes} bytes in ${snap.ms.toFixed(0)} ms`);
  await sbx.deleteSession(source).catch(() => undefined);
  const cold: number[] = [];
  const forked: number[] = [];
  const digest: number[] = [];
  const hashed: number[] = [];
  const written: number[] = [];
  const received: number[] = [];
  const splits: Awaited<ReturnType<typeof restoreSplit>>[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const c = uniqueName('bench-cold');
    created.push(c);
    const c0 = process.hrtime.bigint();
    await createSessionObject(c, {});
    cold.push(await firstOutput(sbx, c, c0));
    await sbx.deleteSession(c);
    await noPod(c);

    const f = uniqueName('bench-fork');
    created.push(f);
    const f0 = process.hrtime.bigint();
    await createSessionObject(f, { fromSnapshot: { name: snap.name } });
    forked.push(await firstOutput(sbx, f, f0));
    splits.push(await restoreSplit(f));
    digest.push(await digestAlone(f));
    const h = await hashing(f, snap.bytes);
    hashed.push(h.podMs + h.hostMs);
    written.push(await writeFloor(f));
    received.push(await receiveFloor(f));
    await sbx.deleteSession(f);
    await noPod(f);
    console.log(
      `  sample ${i + 1}/${SAMPLES}: cold ${cold.at(-1)!.toFixed(0)} ms, fork ${forked.at(-1)!.toFixed(0)} ms, digest alone ${digest.at(-1)!.toFixed(0)} ms, tar -x in the Pod ${written.at(-1)!.toFixed(0)} ms, over TCP ${received.at(-1)!.toFixed(0)} ms (load ${load()})`,
    );
  }
  row('cold create-to-first-output', cold, 'ms');
  row('fork (fromSnapshot) create-to-first-output', forked, 'ms');
  row('digest alone on the restored Pod', digest, 'ms');
  row('sha256 of the restored bytes, Pod + host', hashed, 'ms');
  row('write floor: tar -x of the tree in the Pod', written, 'ms');
  row('receive+write floor: tar -x from a TCP socket', received, 'ms');
  const split: Array<[string, (x: (typeof splits)[number]) => number, string]> = [
    ['restore in the operator (manifest + copy)', (x) => x.operatorMs, 'ms'],
    ['  of it waiting for the object store', (x) => x.storeWaitMs, 'ms'],
    ['restore in the agent (PUT /v1/archive)', (x) => x.agentMs, 'ms'],
    ['  of it waiting for the archive bytes', (x) => x.agentWaitedMs, 'ms'],
    ['  its own work (writes, hashing, parsing)', (x) => x.agentMs - x.agentWaitedMs, 'ms'],
    ['  body chunks received', (x) => x.chunks, ''],
  ];
  for (const [label, value, unit] of split) row(label, splits.map(value), unit);
  const c50 = median(cold);
  const f50 = median(forked);
  console.log(`  fork / cold p50: ${(f50 / c50).toFixed(2)}x (goal <= 2x)`);
  const restore = f50 - c50;
  const w50 = median(written);
  console.log(
    `  the runtime's floor for a fork: cold p50 + tar -x p50 = ${(c50 + w50).toFixed(0)} ms = ${((c50 + w50) / c50).toFixed(2)}x cold; ` +
      `fork / that floor ${(f50 / (c50 + w50)).toFixed(2)}x; the restore's own time / tar -x: ${(restore / w50).toFixed(2)}x`,
  );
  const r50 = median(received);
  console.log(
    `  with the network receive: cold p50 + receive+write p50 = ${(c50 + r50).toFixed(0)} ms = ${((c50 + r50) / c50).toFixed(2)}x cold; ` +
      `fork / that floor ${(f50 / (c50 + r50)).toFixed(2)}x; the restore's own time / receive+write: ${(restore / r50).toFixed(2)}x`,
  );
  console.log(
    `  restore's own time (fork p50 - cold p50): ${restore.toFixed(0)} ms; digest alone p50 ${median(digest).toFixed(0)} ms ` +
      `= ${((median(digest) / restore) * 100).toFixed(0)}% of it (reading and hashing the tree again: a loose upper bound)`,
  );
  console.log(
    `  verification's own work (sha256 of the bytes in the Pod and in the operator) p50 ${median(hashed).toFixed(0)} ms ` +
      `= ${((median(hashed) / restore) * 100).toFixed(1)}% of the restore's own time (goal <= 20%)`,
  );
}

async function main(): Promise<void> {
  console.log(
    `snapshot bench: ${JSON.stringify({ ROUNDS, FILES, MIB, FORK_MIB, SAMPLES, PART_BYTES, IN_FLIGHT })}, load ${load()}`,
  );
  const created: string[] = [];
  const snapshots: string[] = [];
  try {
    await throughput(created, snapshots);
    await fork(created, snapshots);
  } finally {
    await Promise.all(created.map((n) => sbx.deleteSession(n).catch(() => undefined)));
    for (const s of snapshots) await sbx.deleteSnapshot(s).catch(() => undefined);
  }
}

await main();
