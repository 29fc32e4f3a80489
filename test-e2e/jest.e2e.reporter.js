// Reporter of the e2e tier: at the end of the run it prints every test that did not run with the
// reason its spec recorded (src/framework/not-run.ts, src/framework/e2e-summary.ts), so a spec the
// cluster cannot host is reported as NOT RUN, never silently skipped. With E2E_SUMMARY_FILE set,
// the summary is also written there.
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { importTsModule } from '@sandbox-platform/test-support/jest.global.js';

export default class NotRunReporter {
  /** @param {{ rootDir: string, testNamePattern?: string }} globalConfig */
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    this.nameFilter = globalConfig.testNamePattern || undefined;
    // Set before the test files' environments copy process.env, so the specs see it.
    this.file = process.env.E2E_NOT_RUN_FILE || join(tmpdir(), `e2e-not-run-${process.pid}.jsonl`);
    process.env.E2E_NOT_RUN_FILE = this.file;
  }

  onRunStart() {
    rmSync(this.file, { force: true });
  }

  /** @param {unknown} _contexts @param {{ testResults: import('./src/framework/e2e-summary.ts').FileOutcome[] }} results */
  async onRunComplete(_contexts, results) {
    const { readNotRun, summarize, formatSummary } = await importTsModule(
      new URL('./src/framework/e2e-summary.ts', import.meta.url),
    );
    const summary = summarize(results.testResults, readNotRun(this.file), { nameFilter: this.nameFilter });
    const text = formatSummary(summary, this.rootDir);
    process.stdout.write(`\n${text}`);
    if (process.env.E2E_SUMMARY_FILE) writeFileSync(process.env.E2E_SUMMARY_FILE, text);
    rmSync(this.file, { force: true });
  }
}
