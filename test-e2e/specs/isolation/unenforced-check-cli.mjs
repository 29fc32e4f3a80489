// The check of `make test-isolation-unenforced` (unenforced.sh): reads jest's JSON results and the
// specs' reports from DIR and prints what holds ("ok: ...") and what does not ("NOT OK: ...").
// Exit 0 only when both specs failed for the missing protections alone (unenforced-check.ts).
//   node test-e2e/specs/isolation/unenforced-check-cli.mjs DIR
// DIR holds isolation.jest.json and pids.jest.json (jest --json --outputFile) and the reports
// written with E2E_ISOLATION_REPORT_DIR=DIR.
import { existsSync, readFileSync } from 'node:fs';
import { register } from 'node:module';
import { join } from 'node:path';

register('@sandbox-platform/test-support/jest.ts-hooks.js', import.meta.url);
const { checkIsolation, checkPids } = await import('./unenforced-check.ts');
const { REPORTS } = await import('./report.ts');

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: unenforced-check-cli.mjs DIR\n');
  process.exit(2);
}
const read = (file) =>
  existsSync(join(dir, file)) ? JSON.parse(readFileSync(join(dir, file), 'utf8')) : undefined;
const jestOf = (file) => read(file) ?? { testResults: [] };

const results = [
  checkIsolation(jestOf('isolation.jest.json'), {
    matrix: read(REPORTS.matrix),
    udp: read(REPORTS.udp),
    egress: read(REPORTS.egress),
  }),
  checkPids(jestOf('pids.jest.json'), read(REPORTS.pids)),
];
let failed = false;
for (const r of results) {
  for (const line of r.ok) process.stdout.write(`ok: ${line}\n`);
  for (const line of r.problems) process.stderr.write(`NOT OK: ${line}\n`);
  failed ||= r.problems.length > 0;
}
process.stdout.write(
  failed
    ? 'NOT OK: without its protections the isolation proof did not fail as it must\n'
    : 'ok: without their protections the isolation matrix and the PID probe FAILED, every cell open\n',
);
process.exit(failed ? 1 : 0);
