// sbx and `kubectl sandbox` against a live gateway, as a user runs them: the bundle as a
// subprocess (SBX, default dist/sbx.cjs), installed as kubectl-sandbox on PATH for kubectl's
// plugin mechanism (KUBECTL: the kubectl command line, e.g. "localkube kubectl"). Run by mk/sdk.mk
// with node --test; needs E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY and E2E_NAMESPACE.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

const SBX = process.env.SBX ?? join(import.meta.dirname, '../../dist/sbx.cjs');
const KUBECTL = (process.env.KUBECTL ?? '').split(' ').filter(Boolean);
const url = required('E2E_GATEWAY_URL');
const key = required('E2E_GATEWAY_API_KEY');
const namespace = required('E2E_NAMESPACE');
const name = `sdk-cli-${randomBytes(3).toString('hex')}`;

const work = mkdtempSync(join(tmpdir(), 'sbx-e2e-'));
const bin = join(work, 'bin');
const home = join(work, 'home');
const env = {
  PATH: `${bin}:${process.env.PATH}`,
  HOME: home,
  XDG_CONFIG_HOME: join(home, '.config'),
  SANDBOX_URL: url,
  SANDBOX_KEY: key,
  SANDBOX_NAMESPACE: namespace,
  // kubectl must not need a cluster for a plugin: point it at nothing.
  KUBECONFIG: join(work, 'no-kubeconfig'),
};

function required(k) {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set (see mk/sdk.mk)`);
  return v;
}

/** Runs sbx (or any command) to completion: { code, stdout (Buffer), stderr (string) }. */
function run(cmd, args, extraEnv = {}, input) {
  const r = spawnSync(cmd, args, {
    env: { ...env, ...extraEnv },
    input,
    cwd: work,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
}
const sbx = (args, extraEnv, input) => run(SBX, args, extraEnv, input);

/** One line on stderr, no stack trace, the given exit code. */
function assertOneLineError(r, code, pattern) {
  assert.equal(r.code, code, `exit ${r.code}, stderr: ${r.stderr}`);
  assert.equal(r.stderr.trimEnd().split('\n').length, 1, `not one line: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\n\s+at |node:internal/);
  assert.match(r.stderr, pattern);
}

async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe(`sbx against ${url}`, () => {
  before(() => {
    mkdirSync(bin, { recursive: true });
    mkdirSync(home, { recursive: true });
    copyFileSync(SBX, join(bin, 'kubectl-sandbox'));
    chmodSync(join(bin, 'kubectl-sandbox'), 0o755);
    const r = sbx(['create', name, '--wait', '--timeout', '120s']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout.toString(), new RegExp(`^${name}\\s+True\\s+SandboxReady`, 'm'));
    assert.match(r.stderr, new RegExp(`session "${name}" created`));
  });

  after(() => {
    sbx(['delete', name]);
    rmSync(work, { recursive: true, force: true });
  });

  it('exec passes the exit code and the two streams through', () => {
    const r = sbx(['exec', name, '--', 'sh', '-c', 'echo out; echo err >&2; exit 7']);
    assert.equal(r.code, 7);
    assert.equal(r.stdout.toString(), 'out\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(sbx(['exec', name, '--', 'cd . && test -n "$PWD"']).code, 0);
    assert.equal(sbx(['exec', name, '--', 'exit 123']).code, 123);
  });

  it('exec streams: output arrives while the command still runs', { timeout: 120_000 }, async () => {
    // The command cannot finish before the test uploads `go`, which it does only after it has
    // seen the first line: without streaming this would wait for the loop's bound and fail.
    const child = spawn(
      SBX,
      [
        'exec',
        name,
        '--',
        'rm -f go; echo waiting; for i in $(seq 300); do [ -f go ] && break; sleep 0.1; done; [ -f go ] && echo released',
      ],
      { env, cwd: work },
    );
    let out = '';
    const sawFirst = new Promise((resolve) => {
      child.stdout.on('data', (c) => {
        out += c.toString();
        if (out.includes('waiting\n')) resolve();
      });
    });
    let err = '';
    child.stderr.on('data', (c) => (err += c.toString()));
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    // A CLI that exits before its first line fails the test instead of leaving it waiting forever.
    const first = await Promise.race([sawFirst.then(() => 'line'), exited.then((code) => `exit ${code}`)]);
    assert.equal(first, 'line', `sbx exec ended before its first line (${first}): ${err}`);
    assert.equal(out, 'waiting\n');
    assert.equal(sbx(['cp', '-', `${name}:go`], {}, 'x').code, 0);
    assert.equal(await exited, 0);
    assert.equal(out, 'waiting\nreleased\n');
  });

  it('cp round-trips a binary file byte for byte, and the sandbox sees the same bytes', () => {
    const data = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(200_000)]);
    writeFileSync(join(work, 'in.bin'), data);
    assert.equal(sbx(['cp', './in.bin', `${name}:/workspace/cli/in.bin`]).code, 0);
    const back = sbx(['cp', `${name}:cli/in.bin`, './out.bin']);
    assert.equal(back.code, 0, back.stderr);
    assert.ok(readFileSync(join(work, 'out.bin')).equals(data));
    const sum = sbx(['exec', name, '--', 'sha256sum cli/in.bin']).stdout.toString().split(' ')[0];
    assert.equal(sum, createHash('sha256').update(data).digest('hex'));
    const toStdout = sbx(['cp', `${name}:cli/in.bin`, '-']);
    assert.ok(toStdout.stdout.equals(data));
  });

  it('get/list in table, json, yaml and name formats', () => {
    assert.match(sbx(['get']).stdout.toString(), /^NAME\s+READY\s+REASON/);
    const list = JSON.parse(sbx(['list', '-o', 'json']).stdout.toString());
    assert.ok(list.some((s) => s.name === name));
    const one = JSON.parse(sbx(['get', name, '-o', 'json']).stdout.toString());
    assert.equal(one.ready, true);
    assert.match(sbx(['get', name, '-o', 'yaml']).stdout.toString(), new RegExp(`^name: ${name}$`, 'm'));
    assert.ok(sbx(['get', '-o', 'name']).stdout.toString().split('\n').includes(name));
  });

  it('wait returns at once for a Ready session', () => {
    const r = sbx(['wait', name]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.toString(), `session "${name}" is ready\n`);
  });

  it('reads url, key and namespace from the config file', () => {
    const noEnv = { SANDBOX_URL: '', SANDBOX_KEY: '', SANDBOX_NAMESPACE: '' };
    assert.equal(sbx(['config', 'set', 'url', url], noEnv).code, 0);
    assert.equal(sbx(['config', 'set', 'key', '-'], noEnv, key + '\n').code, 0);
    assert.equal(sbx(['config', 'set', 'namespace', namespace], noEnv).code, 0);
    const view = sbx(['config', 'view'], noEnv).stdout.toString();
    assert.doesNotMatch(view, new RegExp(key));
    assert.equal(sbx(['get', name, '-o', 'name'], noEnv).stdout.toString(), `${name}\n`);
    rmSync(join(home, '.config'), { recursive: true, force: true });
  });

  it(
    "works as `kubectl sandbox` through kubectl's plugin mechanism, with no cluster",
    { skip: KUBECTL.length === 0 && 'KUBECTL not set' },
    () => {
      const [cmd, ...pre] = KUBECTL;
      const plugins = run(cmd, [...pre, 'plugin', 'list']);
      assert.equal(plugins.code, 0, plugins.stderr);
      assert.match(plugins.stdout.toString(), new RegExp(`${bin}/kubectl-sandbox`));
      const get = run(cmd, [...pre, 'sandbox', 'get', name, '-o', 'json']);
      assert.equal(get.code, 0, get.stderr);
      assert.equal(JSON.parse(get.stdout.toString()).name, name);
      const exec = run(cmd, [...pre, 'sandbox', 'exec', name, '--', 'exit 9']);
      assert.equal(exec.code, 9);
      assertOneLineError(
        run(cmd, [...pre, 'sandbox', 'get', 'no-such-session-cli']),
        1,
        /^kubectl sandbox: error: .*session-not-found/,
      );
    },
  );

  it('bad input: wrong key, unknown session, gateway down -> one line and a non-zero exit', async () => {
    assertOneLineError(
      sbx(['get'], { SANDBOX_KEY: 'wrong-key-0123456789abcdef' }),
      1,
      /^sbx: error: the gateway refused the API key \(unauthorized\)/,
    );
    assertOneLineError(
      sbx(['get', 'no-such-session-cli']),
      1,
      /^sbx: error: no session no-such-session-cli .*\(session-not-found, HTTP 404\)/,
    );
    assertOneLineError(sbx(['exec', 'no-such-session-cli', '--', 'true']), 1, /session-not-found/);
    assertOneLineError(sbx(['cp', `${name}:no/such/file`, './x']), 1, /\(not-found, HTTP 404\)/);
    assertOneLineError(
      sbx(['cp', './no-such-local-file', `${name}:x`]),
      1,
      /no-such-local-file: no such file or directory/,
    );
    const port = await closedPort();
    assertOneLineError(
      sbx(['get'], { SANDBOX_URL: `http://127.0.0.1:${port}` }),
      1,
      /^sbx: error: cannot reach the gateway at http:\/\/127\.0\.0\.1:\d+: connection refused \(ECONNREFUSED\)/,
    );
    assertOneLineError(sbx(['wait', 'no-such-session-cli', '--timeout', '2s']), 1, /session-not-found/);
    // `sbx shell` needs a terminal: its e2e is shell.e2e.test.mjs (the CLI in a real pty).
  });

  it('completion scripts are valid shell', () => {
    const bash = sbx(['completion', 'bash']);
    assert.equal(bash.code, 0);
    assert.equal(spawnSync('bash', ['-n'], { input: bash.stdout }).status, 0);
    const hasZsh = spawnSync('sh', ['-c', 'command -v zsh']).status === 0;
    if (hasZsh)
      assert.equal(spawnSync('zsh', ['-n'], { input: sbx(['completion', 'zsh']).stdout }).status, 0);
  });

  it('delete', () => {
    const r = sbx(['delete', name]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.toString(), `session "${name}" deleted\n`);
    assert.equal(sbx(['get', name]).code, 1);
  });
});
