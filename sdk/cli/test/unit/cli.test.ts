import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from '@jest/globals';
import {
  AuthenticationError,
  ConnectionError,
  NotFoundError,
  UnavailableError,
  errorFromProblem,
} from '@sandbox-platform/client';

import { bashScript } from '../../src/commands/completion.js';
import { COMMANDS, SESSION_COMMANDS } from '../../src/commands.js';
import { UsageError, errorLine, exitCodeOf } from '../../src/errors.js';
import { age, table } from '../../src/output.js';
import { VERSION } from '../../src/version.js';
import { sbx } from './helpers.js';

const oneLine = (s: string): void => expect(s.trimEnd().split('\n')).toHaveLength(1);

describe('command line', () => {
  it('prints help and the version', async () => {
    const help = await sbx(['help']);
    expect(help.code).toBe(0);
    for (const c of COMMANDS) expect(help.stdout).toContain(`  ${c.name} `);
    expect((await sbx(['help', 'exec'])).stdout).toContain('Usage: sbx exec NAME');
    expect((await sbx(['cp', '--help'])).stdout).toContain('Usage: sbx cp SRC DST');
    expect(await sbx(['version'])).toEqual({ code: 0, stdout: `sbx ${VERSION}\n`, stderr: '' });
    expect((await sbx([])).code).toBe(2);
  });

  it.each([
    [['frobnicate'], 'unknown command "frobnicate"'],
    [['get', '--bogus'], "get: Unknown option '--bogus'"],
    [['get'], 'no gateway URL: pass --url, set SANDBOX_URL'],
    [['get', '--url', 'http://gw'], 'no API key'],
    [['get', '--url', 'gw:8080', '--key', 'k'], 'baseUrl must be an http(s) URL'],
    [['exec', 'box'], 'exec needs a command after --'],
    [['exec', 'box', 'ls'], 'put the command after --'],
    [['cp', 'a', 'b'], 'exactly one side must be NAME:PATH'],
    [['get', '-o', 'xml', '--url', 'http://gw', '--key', 'k'], 'unknown output format "xml"'],
    [['shell'], 'shell needs one session'],
    [['shell', 'box'], 'no gateway URL'],
    [['delete'], 'delete needs at least one session NAME'],
  ])('%j: one line on stderr, exit 2', async (argv, message) => {
    const r = await sbx(argv);
    expect(r.code).toBe(2);
    expect(r.stderr.startsWith('sbx: error: ')).toBe(true);
    expect(r.stderr).toContain(message);
    oneLine(r.stderr);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('takes global flags before the command too', async () => {
    const r = await sbx(['-n', 'team', '--output=json', 'get', '--url', 'http://gw']);
    expect(r.stderr).toContain('no API key');
  });

  it('has the version of its package.json', () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
      version: string;
    };
    expect(VERSION).toBe(pkg.version);
  });
});

describe('error lines', () => {
  it('say what went wrong in one line with the stable code', () => {
    const problem = (status: number, slug: string, detail: string, extra = {}) =>
      errorFromProblem(
        status,
        { type: `https://sandbox.dev/problems/${slug}`, title: 't', status, detail, ...extra },
        null,
      );
    expect(errorLine(problem(404, 'session-not-found', 'no session x in namespace ns'))).toBe(
      'no session x in namespace ns (session-not-found, HTTP 404)',
    );
    expect(errorLine(problem(401, 'unauthorized', 'bad key'))).toBe(
      'the gateway refused the API key (unauthorized): check --key, SANDBOX_KEY or the config file',
    );
    const notReady = errorFromProblem(
      503,
      {
        type: 'https://sandbox.dev/problems/session-not-ready',
        title: 't',
        status: 503,
        detail: 'not ready',
        reason: 'PodPending',
      },
      '2',
    );
    expect(notReady).toBeInstanceOf(UnavailableError);
    expect(errorLine(notReady)).toBe('not ready [PodPending] (session-not-ready, HTTP 503; retry in 2 s)');
    expect(errorLine(new ConnectionError('http://127.0.0.1:9', 'connection refused (ECONNREFUSED)'))).toBe(
      'cannot reach the gateway at http://127.0.0.1:9: connection refused (ECONNREFUSED)',
    );
    expect(errorLine(Object.assign(new Error('x'), { code: 'ENOENT', path: './nope' }))).toBe(
      './nope: no such file or directory',
    );
    expect([exitCodeOf(new UsageError('u')), exitCodeOf(problem(404, 'not-found', 'f'))]).toEqual([2, 1]);
    expect(problem(404, 'not-found', 'f')).toBeInstanceOf(NotFoundError);
    expect(problem(401, 'unauthorized', 'f')).toBeInstanceOf(AuthenticationError);
  });
});

describe('output', () => {
  it('prints a kubectl-style table and ages', () => {
    const now = new Date('2026-12-01T12:00:00Z');
    const out = table(
      [
        {
          name: 'demo',
          namespace: 'ns',
          uid: 'u',
          ready: true,
          reason: 'SandboxReady',
          message: '',
          execTransport: 'Agent',
          createdAt: '2026-12-01T11:55:00Z',
          expiresAt: '2026-12-01T12:30:00Z',
        },
      ],
      now,
    );
    expect(out).toBe(
      'NAME   READY   REASON         TRANSPORT   AGE   EXPIRES\n' +
        'demo   True    SandboxReady   Agent       5m    in 30m\n',
    );
    expect([age(59_000), age(3 * 3600_000 + 60_000), age(72 * 3600_000)]).toEqual(['59s', '3h1m', '3d']);
    expect(table([], now)).toBe('No sessions found.\n');
  });
});

describe('completion', () => {
  it('bash completes commands, and session names through `get -o name`', () => {
    const script = bashScript({
      commands: ['create', 'get', 'exec'],
      sessionCommands: SESSION_COMMANDS,
      globalFlags: ['--url'],
    });
    const complete = (words: string[]): string => {
      const bash = `${script}
sbx() { [ "$1 $2 $3" = "get -o name" ] && printf 'alpha\\nbeta\\n'; }
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}
_sbx; printf '%s\\n' "\${COMPREPLY[@]}"`;
      return spawnSync('bash', ['-c', bash], { encoding: 'utf8' }).stdout;
    };
    expect(complete(['sbx', 'ex'])).toBe('exec\n');
    expect(complete(['sbx', 'exec', 'b'])).toBe('beta\n');
    expect(complete(['sbx', '-n', 'x', 'get', ''])).toBe('alpha\nbeta\n');
    expect(complete(['sbx', 'get', '-o', 'y'])).toBe('yaml\n');
  });
});
