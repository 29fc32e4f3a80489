/**
 * Benchmark of issue 13, side by side in one run on the local cluster, through the in-cluster
 * gateway:
 *   cold:   POST /v1/sessions (a default session: emptyDir workspace) then a streamed exec of
 *           `echo first`, timed from the create to the first stdout chunk;
 *   resume: a streamed exec of `echo first` to a suspended session with a persistent workspace
 *           (its Pod gone, its claim Bound), timed from the call to the first stdout chunk: the
 *           gateway resumes it, the operator creates the Pod on the same claim, the exec runs.
 * Samples alternate cold and resume, one at a time; between samples the session is deleted (cold)
 * or suspended again (resume) and its Pod waited out, untimed, so each sample runs alone (the node
 * has 2 CPUs: 20 sessions of 100m each would not fit at once). Goal: resume p50 <= 1.2x cold p50,
 * both <= 2 s. Reports p50/p99 of each and the ratios.
 *
 * Needs `make platform-up` (the chart, the local-path StorageClass, platform.env).
 *   --sessions N   samples of each kind (default 20)
 */
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import { parseArgs } from 'node:util';

import { LABELS } from '@sandbox-platform/api';

import { firstOutput } from './first-output.js';
import { SandboxClient, UnavailableError } from '../../sdk/typescript/src/index.js';
import { kubeClients } from '../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';

// Not imported from specs/isolation/support.ts: that module pulls in @jest/globals (its notRun),
// which a bench bundle run by plain node cannot load.
const uniqueName = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;

const { values } = parseArgs({ options: { sessions: { type: 'string', default: '20' } } });
const N = Number(values.sessions);
const ns = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
const kube = kubeClients();
const baseUrl = process.env.E2E_GATEWAY_URL;
const apiKey = process.env.E2E_GATEWAY_API_KEY;
if (!baseUrl || !apiKey) throw new Error('needs E2E_GATEWAY_URL and E2E_GATEWAY_API_KEY (make platform-up)');
const sbx = new SandboxClient({ baseUrl, apiKey, namespace: ns, timeoutMs: 300_000 });

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;

async function podsOf(name: string): Promise<number> {
  const list = await kube.core.listNamespacedPod({
    namespace: ns,
    labelSelector: `${LABELS.session}=${name}`,
  });
  return list.items.length;
}

async function noPod(name: string): Promise<void> {
  await waitFor(
    () => podsOf(name),
    predicate(`no Pod of ${name}`, (n) => n === 0),
    {
      timeoutMs: 120_000,
      intervalMs: 200,
    },
  );
}

function summary(label: string, samples: number[]): { p50: number; p99: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const p50 = quantile(sorted, 0.5);
  const p99 = quantile(sorted, 0.99);
  console.log(
    `  ${label.padEnd(38)} n=${String(sorted.length).padEnd(4)} p50 ${p50.toFixed(0)} ms  p99 ${p99.toFixed(0)} ms` +
      `  (min ${sorted[0]!.toFixed(0)}, max ${sorted.at(-1)!.toFixed(0)})`,
  );
  return { p50, p99 };
}

/** Creates the persistent sessions, a few at a time: Ready, a file written, suspended, Pod gone. */
async function prepare(names: string[]): Promise<void> {
  for (let i = 0; i < names.length; i += 4) {
    const batch = names.slice(i, i + 4);
    await Promise.all(
      batch.map(async (name) => {
        await sbx.createSession({ name, persistentWorkspace: true, idleTimeoutSeconds: 1800 });
        // The gateway waits at most 120 s (its maximum); a busy node may need longer: retried.
        for (let tries = 1; ; tries++) {
          try {
            await sbx.exec(name, { command: 'echo kept > kept.txt', waitSeconds: 120 });
            break;
          } catch (err) {
            if (!(err instanceof UnavailableError) || tries >= 3) throw err;
          }
        }
        await sbx.suspendSession(name);
        await noPod(name);
      }),
    );
    console.log(`  prepared ${Math.min(i + 4, names.length)}/${names.length} suspended sessions`);
  }
}

async function main(): Promise<void> {
  const suspended = Array.from({ length: N }, () => uniqueName('bench-resume'));
  const created: string[] = [...suspended];
  console.log(
    `\n== resume vs cold create, through the gateway (${N} samples each, alternating; load ${loadavg()})`,
  );
  try {
    await prepare(suspended);
    const cold: number[] = [];
    const resume: number[] = [];
    for (let i = 0; i < N; i++) {
      const name = uniqueName('bench-cold');
      created.push(name);
      const t0 = process.hrtime.bigint();
      await sbx.createSession({ name, idleTimeoutSeconds: 600 });
      cold.push(await firstOutput(sbx, name, t0));
      await sbx.deleteSession(name);
      await noPod(name);

      const r0 = process.hrtime.bigint();
      resume.push(await firstOutput(sbx, suspended[i]!, r0));
      await sbx.suspendSession(suspended[i]!);
      await noPod(suspended[i]!);
      if ((i + 1) % 5 === 0) console.log(`  ${i + 1}/${N} pairs (load ${loadavg()})`);
    }
    const c = summary('cold create-to-first-output', cold);
    const r = summary('resume-to-first-output', resume);
    console.log(
      `  ratios resume/cold: p50 ${(r.p50 / c.p50).toFixed(2)}x (goal <= 1.2x), p99 ${(r.p99 / c.p99).toFixed(2)}x; ` +
        `p50 <= 2 s: cold ${c.p50 <= 2000 ? 'yes' : 'no'}, resume ${r.p50 <= 2000 ? 'yes' : 'no'}`,
    );
    console.log(`  raw cold ms:   ${cold.map((v) => v.toFixed(0)).join(' ')}`);
    console.log(`  raw resume ms: ${resume.map((v) => v.toFixed(0)).join(' ')}`);
  } finally {
    await Promise.all(created.map((n) => sbx.deleteSession(n).catch(() => undefined)));
  }
}

function loadavg(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
}

await main();
