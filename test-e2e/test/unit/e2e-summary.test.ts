import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from '@jest/globals';

import {
  appendNotRun,
  formatSummary,
  readNotRun,
  summarize,
  type FileOutcome,
  type TestOutcome,
} from '../../src/framework/e2e-summary.js';

const test = (ancestorTitles: string[], title: string, status: string): TestOutcome => ({
  ancestorTitles,
  title,
  fullName: [...ancestorTitles, title].join(' '),
  status,
});

const files: FileOutcome[] = [
  {
    testFilePath: '/r/specs/cluster/network.e2e.test.ts',
    testResults: [
      test(['network'], 'pods talk', 'passed'),
      test(['network'], 'lets the host open a TCP connection to a pod IP', 'pending'),
    ],
  },
  {
    testFilePath: '/r/specs/gvisor/gvisor.e2e.test.ts',
    testResults: [
      test(['a session under gVisor'], 'runs', 'pending'),
      test(['a session under gVisor'], 'uname', 'pending'),
    ],
  },
  {
    testFilePath: '/r/specs/isolation/isolation.e2e.test.ts',
    testResults: [test(['isolation'], 'matrix', 'failed'), test(['isolation'], 'forgotten', 'skipped')],
  },
];

const records = [
  {
    file: '/r/specs/cluster/network.e2e.test.ts',
    title: 'lets the host open a TCP connection to a pod IP',
    reason: 'not local',
  },
  {
    file: '/r/specs/gvisor/gvisor.e2e.test.ts',
    title: 'a session under gVisor',
    reason: 'no RuntimeClass gvisor',
  },
  { file: '/r/specs/isolation/isolation.e2e.test.ts', title: 'the stand-in cells', reason: 'not local' },
];

describe('summarize: every test that did not run, with its reason', () => {
  it('matches a skipped test to its own record or its describe block, and keeps records of parts of tests', () => {
    expect(summarize(files, records)).toEqual({
      passed: 1,
      failed: 1,
      notRun: [
        {
          file: '/r/specs/cluster/network.e2e.test.ts',
          what: 'network lets the host open a TCP connection to a pod IP',
          reason: 'not local',
        },
        {
          file: '/r/specs/gvisor/gvisor.e2e.test.ts',
          what: 'a session under gVisor runs',
          reason: 'no RuntimeClass gvisor',
        },
        {
          file: '/r/specs/gvisor/gvisor.e2e.test.ts',
          what: 'a session under gVisor uname',
          reason: 'no RuntimeClass gvisor',
        },
        {
          file: '/r/specs/isolation/isolation.e2e.test.ts',
          what: 'isolation forgotten',
          reason: 'no reason recorded',
        },
        {
          file: '/r/specs/isolation/isolation.e2e.test.ts',
          what: '(part of a test) the stand-in cells',
          reason: 'not local',
        },
      ],
    });
  });

  it('a record of another file does not explain a skip; a -t filter explains the rest', () => {
    const other = [{ ...records[1]!, file: '/r/specs/elsewhere.e2e.test.ts' }];
    const s = summarize([files[1]!], other, { nameFilter: 'below the limit' });
    expect(s.notRun.map((e) => e.reason)).toEqual([
      'filtered out by -t below the limit',
      'filtered out by -t below the limit',
      'no RuntimeClass gvisor',
    ]);
  });

  it('prints the list with paths relative to the root', () => {
    const text = formatSummary(summarize(files.slice(0, 1), records.slice(0, 1)), '/r');
    expect(text).toBe(
      'e2e summary: 1 passed, 0 failed, 1 NOT RUN\n' +
        '  NOT RUN specs/cluster/network.e2e.test.ts › network lets the host open a TCP connection to a pod IP\n' +
        '          reason: not local\n',
    );
    expect(formatSummary({ passed: 3, failed: 0, notRun: [] }, '/r')).toBe(
      'e2e summary: 3 passed, 0 failed, 0 NOT RUN\n',
    );
  });
});

describe('the record file', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('round-trips records, reads a missing file as none, and refuses a malformed line', () => {
    dir = mkdtempSync(join(tmpdir(), 'e2e-summary-'));
    const file = join(dir, 'not-run.jsonl');
    expect(readNotRun(file)).toEqual([]);
    appendNotRun(records[0]!, file);
    appendNotRun(records[1]!, file);
    expect(readNotRun(file)).toEqual(records.slice(0, 2));
    writeFileSync(file, '{"file":"x"}\n');
    expect(() => readNotRun(file)).toThrow(/not-run.jsonl:1: not a not-run record/);
  });

  it('writes nothing without a file (a run without the e2e reporter)', () => {
    expect(() => appendNotRun(records[0]!, undefined)).not.toThrow();
  });
});
