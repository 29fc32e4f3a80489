/**
 * The verdict of `make test-isolation-unenforced` (unenforced.sh): on a cluster restarted without
 * the NetworkPolicy enforcer and without podPidsLimit, the isolation specs must fail, and fail for
 * the right reason. From jest's JSON results and the specs' reports (report.ts) it requires:
 *
 * - isolation: exactly the policy tests failed (the matrix, the UDP probe, the egress CIDR) and
 *   every other test passed (none skipped); the matrix has every required cell and EVERY cell
 *   opened; the UDP query was answered; the egress target was reachable before it was allowed.
 * - PID limit: the probe test failed, and all its processes started.
 *
 * Anything else (a spec broken by something other than the missing protection, a cell that stayed
 * closed, a missing report) is a problem: the proof is then not shown. Pure; unenforced-check-cli.mjs
 * reads the files and prints the result.
 */
import { describeOutcome, type CellResult } from './matrix.js';
import { missingCells, PIDS_ATTEMPTS, requiredCells, TITLES, type PidsReport } from './report.js';

/** The part of jest's --json output the check reads. */
export interface JestJson {
  testResults: Array<{
    name: string;
    message?: string;
    assertionResults: Array<{ fullName: string; title: string; status: string }>;
  }>;
}

/** The isolation spec's reports (undefined: the test did not write it). */
export interface IsolationReports {
  matrix?: CellResult[];
  udp?: CellResult[];
  egress?: CellResult[];
}

/** What the check found: `ok` lines (evidence) and `problems` (each one fails the check). */
export interface CheckResult {
  ok: string[];
  problems: string[];
}

function assertions(jest: JestJson, fileSuffix: string): JestJson['testResults'][number] | undefined {
  return jest.testResults.find((f) => f.name.endsWith(fileSuffix));
}

/** Every cell of `cells` opened; names the ones that did not. */
function allOpen(what: string, cells: CellResult[] | undefined, out: CheckResult): void {
  if (!cells || cells.length === 0) {
    out.problems.push(`${what}: no report (the test did not get to its probes)`);
    return;
  }
  const closed = cells.filter((c) => c.attack.kind !== 'open');
  for (const c of closed) {
    out.problems.push(
      `${what}: cell ${c.name} ${c.host}:${c.port} did not open (${describeOutcome(c.attack)})`,
    );
  }
  if (closed.length === 0) out.ok.push(`${what}: all ${cells.length} cells OPEN`);
}

/** The isolation spec's run without the enforcer. */
export function checkIsolation(jest: JestJson, reports: IsolationReports): CheckResult {
  const out: CheckResult = { ok: [], problems: [] };
  const file = assertions(jest, 'isolation/isolation.e2e.test.ts');
  if (!file || file.assertionResults.length === 0) {
    out.problems.push(`isolation: no test results${file?.message ? `: ${file.message}` : ''}`);
    return out;
  }
  const policy = new Set<string>([TITLES.matrix, TITLES.udp, TITLES.egress]);
  for (const t of file.assertionResults) {
    const must = policy.has(t.title) ? 'failed' : 'passed';
    if (t.status !== must) out.problems.push(`isolation: "${t.fullName}" ${t.status}, must have ${must}`);
  }
  for (const title of policy) {
    if (!file.assertionResults.some((t) => t.title === title))
      out.problems.push(`isolation: no test "${title}"`);
  }
  allOpen('isolation matrix', reports.matrix, out);
  if (reports.matrix) {
    const missing = missingCells(
      reports.matrix.map((c) => c.name),
      requiredCells({ local: true, gvisor: true, runc: true }),
    );
    if (missing.length > 0)
      out.problems.push(`isolation matrix: required cells missing: ${missing.join(', ')}`);
  }
  allOpen('UDP to the outside-DNS stand-in', reports.udp, out);
  allOpen('egress CIDR target before it is allowed', reports.egress, out);
  return out;
}

/** The PID-limit probe's run without podPidsLimit (the spec run with -t on the probe). */
export function checkPids(jest: JestJson, report: PidsReport | undefined): CheckResult {
  const out: CheckResult = { ok: [], problems: [] };
  const probe = assertions(jest, 'isolation/pids.e2e.test.ts')?.assertionResults.find(
    (t) => t.title === TITLES.pidsProbe,
  );
  if (!probe) out.problems.push(`pids: no test "${TITLES.pidsProbe}"`);
  else if (probe.status !== 'failed')
    out.problems.push(`pids: the probe test ${probe.status}, must have failed`);
  if (!report) out.problems.push('pids: no report (the probe did not run)');
  else if (report.started !== PIDS_ATTEMPTS || report.attempts !== PIDS_ATTEMPTS) {
    out.problems.push(
      `pids: ${report.started} of ${report.attempts} processes started, must be all ${PIDS_ATTEMPTS}`,
    );
  } else {
    out.ok.push(`pids: all ${report.started} processes started`);
  }
  return out;
}
