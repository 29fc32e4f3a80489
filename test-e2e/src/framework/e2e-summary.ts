/**
 * The e2e run's summary of what did NOT run. A spec that cannot run on the cluster at hand (a
 * local-only chaos spec against E2E_KUBECONFIG, gVisor without its RuntimeClass, the stand-ins off
 * the local node) records why (not-run.ts, in the test files) and is skipped; the e2e reporter
 * (jest.e2e.reporter.js) reads the records at the end of the run and prints every skipped test
 * with its reason, so nothing is skipped silently. Pure functions plus the record file's IO; no
 * jest import (the reporter runs outside the test environment).
 */
import { appendFileSync, readFileSync } from 'node:fs';

/** Environment variable naming the JSON-lines file the records go to (set by the reporter). */
export const NOT_RUN_FILE_ENV = 'E2E_NOT_RUN_FILE';

/** One record: `title` (a test, a describe block, or a part of a test) of `file` does not run. */
export interface NotRunRecord {
  /** Absolute path of the test file. */
  file: string;
  /** The test's or describe block's title as written in the spec, or a part of a test. */
  title: string;
  reason: string;
}

/** Appends a record to the run's file; without the reporter (no file named) nothing is written. */
export function appendNotRun(record: NotRunRecord, file = process.env[NOT_RUN_FILE_ENV]): void {
  if (!file) return;
  appendFileSync(file, `${JSON.stringify(record)}\n`);
}

/** Reads the run's records; a missing file is an empty list, a malformed line an error. */
export function readNotRun(file: string): NotRunRecord[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const r = JSON.parse(line) as Partial<NotRunRecord>;
      if (typeof r.file !== 'string' || typeof r.title !== 'string' || typeof r.reason !== 'string') {
        throw new Error(`${file}:${i + 1}: not a not-run record: ${line}`);
      }
      return r as NotRunRecord;
    });
}

/** The part of jest's test result the summary reads (an AssertionResult). */
export interface TestOutcome {
  ancestorTitles: string[];
  title: string;
  fullName: string;
  status: string;
}

/** The part of jest's per-file result the summary reads. */
export interface FileOutcome {
  testFilePath: string;
  testResults: TestOutcome[];
}

/** One line of the NOT RUN list. */
export interface NotRunEntry {
  file: string;
  /** The skipped test's full name, or the recorded part of a test that ran. */
  what: string;
  reason: string;
}

/** The summary: counts of the run and every test or part that did not run, with its reason. */
export interface E2eSummary {
  passed: number;
  failed: number;
  notRun: NotRunEntry[];
}

/** Jest statuses of a test that did not run. */
const SKIPPED = new Set(['pending', 'skipped', 'todo', 'disabled']);

/** The reason recorded for a skipped test: its own title, else the nearest describe block's. */
function reasonFor(test: TestOutcome, records: NotRunRecord[]): NotRunRecord | undefined {
  const titles = [test.title, ...[...test.ancestorTitles].reverse()];
  for (const t of titles) {
    const hit = records.find((r) => r.title === t);
    if (hit) return hit;
  }
  return undefined;
}

/**
 * Every skipped test of the run with the reason its spec recorded (or "no reason recorded"; with
 * a `-t` filter, "filtered out by -t"), and every record that matched no skipped test (a part of a
 * test that ran without it, e.g. a matrix cell the cluster cannot host).
 */
export function summarize(
  files: FileOutcome[],
  records: NotRunRecord[],
  opts: { nameFilter?: string } = {},
): E2eSummary {
  const tests = files.flatMap((f) => f.testResults.map((t) => ({ file: f.testFilePath, t })));
  const summary: E2eSummary = {
    passed: tests.filter(({ t }) => t.status === 'passed').length,
    failed: tests.filter(({ t }) => t.status === 'failed').length,
    notRun: [],
  };
  const fallback = opts.nameFilter ? `filtered out by -t ${opts.nameFilter}` : 'no reason recorded';
  const used = new Set<NotRunRecord>();
  for (const { file, t } of tests.filter(({ t }) => SKIPPED.has(t.status))) {
    const hit = reasonFor(
      t,
      records.filter((r) => r.file === file),
    );
    if (hit) used.add(hit);
    summary.notRun.push({ file, what: t.fullName, reason: hit?.reason ?? fallback });
  }
  for (const r of records) {
    if (!used.has(r))
      summary.notRun.push({ file: r.file, what: `(part of a test) ${r.title}`, reason: r.reason });
  }
  return summary;
}

/** The summary as printed at the end of the e2e run; file paths relative to `rootDir`. */
export function formatSummary(summary: E2eSummary, rootDir: string): string {
  const rel = (p: string): string => (p.startsWith(`${rootDir}/`) ? p.slice(rootDir.length + 1) : p);
  const head = `e2e summary: ${summary.passed} passed, ${summary.failed} failed, ${summary.notRun.length} NOT RUN`;
  if (summary.notRun.length === 0) return `${head}\n`;
  const lines = summary.notRun.map(
    (e) => `  NOT RUN ${rel(e.file)} › ${e.what}\n          reason: ${e.reason}`,
  );
  return [head, ...lines, ''].join('\n');
}
