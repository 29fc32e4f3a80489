import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterEach, describe, expect, it } from '@jest/globals';

import type { CellResult, Outcome } from '../../specs/isolation/matrix.js';
import { PIDS_ATTEMPTS, REPORTS, requiredCells, TITLES } from '../../specs/isolation/report.js';
import { checkIsolation, checkPids, type JestJson } from '../../specs/isolation/unenforced-check.js';

const ISO = '/repo/test-e2e/specs/isolation/isolation.e2e.test.ts';
const PIDS = '/repo/test-e2e/specs/isolation/pids.e2e.test.ts';

const cell = (name: string, attack: Outcome = { kind: 'open' }): CellResult => ({
  name,
  host: '10.0.0.9',
  port: 8090,
  attack,
  controlPlace: 'node',
  control: { kind: 'open' },
  verdict: attack.kind === 'open' ? 'OPEN' : 'closed',
  why: '',
});

/** Every required cell (patterns as one concrete name), all open: the matrix without an enforcer. */
const fullMatrix = (): CellResult[] =>
  requiredCells({ local: true, gvisor: true, runc: true }).map((r) =>
    cell(
      typeof r === 'string'
        ? r
        : r.source.includes('gateway')
          ? 'gateway-pod-0-metrics'
          : 'operator-pod-0-metrics',
    ),
  );

type Status = 'passed' | 'failed' | 'pending';

/** jest's JSON of the isolation spec: the three policy tests and two others, with their statuses. */
function isolationJest(statuses: Partial<Record<string, Status>> = {}): JestJson {
  const tests = [
    TITLES.matrix,
    TITLES.udp,
    'the gateway still reaches the agents',
    TITLES.egress,
    'resolves names',
  ];
  const policy = new Set<string>([TITLES.matrix, TITLES.udp, TITLES.egress]);
  return {
    testResults: [
      {
        name: ISO,
        assertionResults: tests.map((title) => ({
          title,
          fullName: `isolation ${title}`,
          status: statuses[title] ?? (policy.has(title) ? 'failed' : 'passed'),
        })),
      },
    ],
  };
}

const reports = () => ({
  matrix: fullMatrix(),
  udp: [cell('udp-external-dns-standin')],
  egress: [cell('allowed-target')],
});

describe('checkIsolation: the isolation spec without the enforcer', () => {
  it('holds when exactly the policy tests failed and every cell opened', () => {
    const r = checkIsolation(isolationJest(), reports());
    expect(r.problems).toEqual([]);
    expect(r.ok).toEqual([
      `isolation matrix: all ${fullMatrix().length} cells OPEN`,
      'UDP to the outside-DNS stand-in: all 1 cells OPEN',
      'egress CIDR target before it is allowed: all 1 cells OPEN',
    ]);
  });

  it('fails when a single cell stayed closed (the old check passed with one cell open)', () => {
    const matrix = fullMatrix();
    const name = matrix[3]!.name;
    matrix[3] = cell(name, { kind: 'timeout' });
    expect(checkIsolation(isolationJest(), { ...reports(), matrix }).problems).toEqual([
      `isolation matrix: cell ${name} 10.0.0.9:8090 did not open (timeout)`,
    ]);
  });

  it('fails when a required cell is missing from the matrix', () => {
    const matrix = fullMatrix().filter((c) => c.name !== 'agent-warm-pool-pod');
    expect(checkIsolation(isolationJest(), { ...reports(), matrix }).problems).toEqual([
      'isolation matrix: required cells missing: agent-warm-pool-pod',
    ]);
  });

  it('fails when another test failed too (something else broke), or a control test was skipped', () => {
    const r = checkIsolation(
      isolationJest({ 'the gateway still reaches the agents': 'failed', 'resolves names': 'pending' }),
      reports(),
    );
    expect(r.problems).toEqual([
      'isolation: "isolation the gateway still reaches the agents" failed, must have passed',
      'isolation: "isolation resolves names" pending, must have passed',
    ]);
  });

  it('fails when the matrix passed or never wrote its report (it did not get to its probes)', () => {
    const r = checkIsolation(isolationJest({ [TITLES.matrix]: 'passed' }), {
      ...reports(),
      matrix: undefined,
    });
    expect(r.problems).toEqual([
      `isolation: "isolation ${TITLES.matrix}" passed, must have failed`,
      'isolation matrix: no report (the test did not get to its probes)',
    ]);
  });

  it("fails without results for the spec, naming jest's message", () => {
    const r = checkIsolation(
      { testResults: [{ name: ISO, message: 'SyntaxError', assertionResults: [] }] },
      {},
    );
    expect(r.problems).toEqual(['isolation: no test results: SyntaxError']);
  });
});

describe('checkPids: the PID probe without podPidsLimit', () => {
  const jest = (status: Status): JestJson => ({
    testResults: [
      { name: PIDS, assertionResults: [{ title: TITLES.pidsProbe, fullName: TITLES.pidsProbe, status }] },
    ],
  });

  it('holds when the probe failed and all its processes started', () => {
    const r = checkPids(jest('failed'), { attempts: PIDS_ATTEMPTS, started: PIDS_ATTEMPTS, errno: 0 });
    expect(r).toEqual({ ok: [`pids: all ${PIDS_ATTEMPTS} processes started`], problems: [] });
  });

  it('fails when the limit still stopped it, or the probe passed, or no report', () => {
    expect(checkPids(jest('failed'), { attempts: PIDS_ATTEMPTS, started: 1011, errno: 11 }).problems).toEqual(
      [`pids: 1011 of ${PIDS_ATTEMPTS} processes started, must be all ${PIDS_ATTEMPTS}`],
    );
    expect(checkPids(jest('passed'), undefined).problems).toEqual([
      'pids: the probe test passed, must have failed',
      'pids: no report (the probe did not run)',
    ]);
  });
});

describe('unenforced-check-cli.mjs (what unenforced.sh runs)', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const run = async (files: Record<string, unknown>): Promise<{ code: number; out: string }> => {
    dir = mkdtempSync(join(tmpdir(), 'unenforced-check-'));
    for (const [f, data] of Object.entries(files)) writeFileSync(join(dir, f), JSON.stringify(data));
    const script = join(import.meta.dirname, '../../specs/isolation/unenforced-check-cli.mjs');
    try {
      const r = await promisify(execFile)(process.execPath, [script, dir]);
      return { code: 0, out: r.stdout + r.stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, out: e.stdout + e.stderr };
    }
  };

  const pidsJest = {
    testResults: [
      {
        name: PIDS,
        assertionResults: [{ title: TITLES.pidsProbe, fullName: TITLES.pidsProbe, status: 'failed' }],
      },
    ],
  };

  it('exits 0 on a run that failed as it must', async () => {
    const { matrix, udp, egress } = reports();
    const r = await run({
      'isolation.jest.json': isolationJest(),
      'pids.jest.json': pidsJest,
      [REPORTS.matrix]: matrix,
      [REPORTS.udp]: udp,
      [REPORTS.egress]: egress,
      [REPORTS.pids]: { attempts: PIDS_ATTEMPTS, started: PIDS_ATTEMPTS, errno: 0 },
    });
    expect(r.out).toMatch(/ok: without their protections the isolation matrix and the PID probe FAILED/);
    expect(r.code).toBe(0);
  });

  it('exits 1 with every problem listed when the files are missing', async () => {
    const r = await run({});
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/NOT OK: isolation: no test results/);
    expect(r.out).toMatch(/NOT OK: pids: no report/);
  });
});
