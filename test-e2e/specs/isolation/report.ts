/**
 * What the isolation specs leave for `make test-isolation-unenforced` (unenforced.sh) to check:
 * with E2E_ISOLATION_REPORT_DIR set, each policy test writes its cells (or its probe's figures)
 * there as JSON, and unenforced-check.ts reads them next to jest's JSON result. Also the list of
 * cells the matrix must have, used by the spec itself and by the check.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { CellResult } from './matrix.js';

/**
 * Titles of the tests that assert a protection, shared by the specs and the check: without the
 * enforcer (or without podPidsLimit) exactly these must fail, and every other test must pass.
 */
export const TITLES = {
  matrix:
    'every lateral connection from inside a session fails as the policy makes it fail, and its control connects',
  udp: 'a UDP query to a DNS server outside the cluster gets no answer (control: the node gets one)',
  egress: 'is unreachable before, reachable once allowed (helm upgrade), and unreachable after removal',
  pidsProbe: "stops a session's processes below the limit (fork fails with EAGAIN)",
} as const;

/** Processes the PID probe tries to start: well above the local cluster's limit (1024). */
export const PIDS_ATTEMPTS = 3000;

/** Directory the reports go to; unset (a normal run): nothing is written. */
export const REPORT_DIR_ENV = 'E2E_ISOLATION_REPORT_DIR';

/** The reports: one per policy test of isolation.e2e.test.ts, and the PID probe's figures. */
export const REPORTS = {
  matrix: 'matrix.json',
  udp: 'udp.json',
  egress: 'egress.json',
  pids: 'pids.json',
} as const;

/** The PID probe's figures: processes it tried to start, started, and the errno that stopped it. */
export interface PidsReport {
  attempts: number;
  started: number;
  errno: number;
}

/** Writes a report when E2E_ISOLATION_REPORT_DIR is set. */
export function writeReport(file: string, data: CellResult[] | PidsReport): void {
  const dir = process.env[REPORT_DIR_ENV];
  if (dir) writeFileSync(join(dir, file), `${JSON.stringify(data, null, 2)}\n`);
}

/** Ports of the gateway's port range (gateway.ports.allowed, 1024-65535) a listener opens in sessions. */
export const RANGE_PORTS = [1024, 8000, 65535] as const;

/**
 * Session targets with a listener on the range ports, by cell suffix: sessions of the platform's
 * default runtime in both tenants, one asking for gVisor, one asking for runc, one resumed.
 */
export const LISTENING_TARGETS = [
  'same-tenant',
  'other-tenant',
  'gvisor-other-tenant',
  'runc-same-tenant',
  'resumed-same-tenant',
];

/**
 * The cells the lateral matrix must have: every session kind's agent, the range ports of every
 * session kind, the platform's metrics ports, the API server, the kubelet; with `local`, the
 * stand-ins; with `gvisor` / `runc`, the cells of the session asking for that RuntimeClass.
 */
export function requiredCells(opts: {
  local: boolean;
  gvisor: boolean;
  runc: boolean;
}): Array<string | RegExp> {
  const kinds = LISTENING_TARGETS.filter(
    (k) => (opts.gvisor || !k.startsWith('gvisor')) && (opts.runc || !k.startsWith('runc')),
  );
  return [
    ...kinds.map((k) => `agent-${k}`),
    'agent-warm-pool-pod',
    ...kinds.flatMap((k) => RANGE_PORTS.map((p) => `port-${p}-${k}`)),
    /^gateway-pod-\d+-metrics$/,
    /^operator-pod-\d+-metrics$/,
    'apiserver-service',
    'apiserver-host',
    'kubelet',
    ...(opts.local ? ['metadata-standin', 'external-dns-standin'] : []),
  ];
}

/** The required cells (names or patterns) that `names` lacks. */
export function missingCells(names: string[], required: Array<string | RegExp>): string[] {
  return required
    .filter((r) => !names.some((n) => (typeof r === 'string' ? n === r : r.test(n))))
    .map(String);
}
