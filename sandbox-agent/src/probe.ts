/**
 * `sandbox-agent probe`: the pod's exec readiness probe. GETs /healthz on loopback (so
 * NetworkPolicies never block it) and exits 0 when the agent answers 200, else 1.
 * `sandbox-agent probe --live`: the liveness probe, the same against /livez (see liveness.ts).
 */
import { get } from 'node:http';

import { AGENT_PORT } from '@sandbox-platform/api';

import { ENV } from './config.js';

const PROBE_TIMEOUT_MS = 3000;

/** Which probe: readiness (/healthz) or liveness (/livez). */
export type ProbeKind = 'ready' | 'live';

const PROBES: Record<ProbeKind, { path: string; failure: string }> = {
  ready: { path: '/healthz', failure: 'agent not ready' },
  live: { path: '/livez', failure: 'agent not live' },
};

/** Probes the local agent; returns the process exit code. Reasons go to stderr (kubelet records them). */
export async function runProbe(env: NodeJS.ProcessEnv, kind: ProbeKind = 'ready'): Promise<number> {
  const rawPort = env[ENV.port] || String(AGENT_PORT);
  if (!/^\d+$/.test(rawPort)) return fail(`${ENV.port} is not a port: "${rawPort}"`);
  const { path, failure } = PROBES[kind];
  const status = await probeStatus(probeHost(env[ENV.host]), Number(rawPort), path).catch((err: unknown) =>
    err instanceof Error ? err.message : String(err),
  );
  return status === 200 ? 0 : fail(`${failure}: ${status}`);
}

/** Loopback unless the agent is bound to one specific address. */
function probeHost(host: string | undefined): string {
  if (!host || host === '0.0.0.0') return '127.0.0.1';
  return host === '::' ? '::1' : host;
}

function probeStatus(host: string, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get({ host, port, path, timeout: PROBE_TIMEOUT_MS }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)));
    req.on('error', reject);
  });
}

function fail(reason: string): number {
  process.stderr.write(`sandbox-agent probe: ${reason}\n`);
  return 1;
}
