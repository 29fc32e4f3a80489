// `sbx shell` against a live gateway, driven as a person drives it: the bundle (SBX, default
// dist/sbx.cjs) runs in a real pseudo-terminal (pty-run.py next to this file: Python's standard
// pty and termios), keystrokes are typed into the terminal, and the window is resized as a
// terminal emulator does (TIOCSWINSZ, so the kernel sends SIGWINCH to the CLI). Checks: the
// remote terminal starts with the local size, follows a resize (`stty size`), runs a command, and
// `exit 3` ends the CLI with status 3. Run by mk/sdk.mk with node --test; needs E2E_GATEWAY_URL,
// E2E_GATEWAY_API_KEY and E2E_NAMESPACE, and python3. SBX_E2E_NO_TERMINAL=<reason> skips it (a
// gateway whose agents have no terminal helper, e.g. make sdk-test-local).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

const SBX = process.env.SBX ?? join(import.meta.dirname, '../../dist/sbx.cjs');
const PTY_RUN = join(import.meta.dirname, 'pty-run.py');
const noTerminal = process.env.SBX_E2E_NO_TERMINAL;
const url = required('E2E_GATEWAY_URL');
const key = required('E2E_GATEWAY_API_KEY');
const namespace = required('E2E_NAMESPACE');
const name = `sdk-cli-sh-${randomBytes(3).toString('hex')}`;
/** How long one step may wait for the terminal before the test says what it waited for. */
const STEP_MS = 30_000;

const env = {
  ...process.env,
  SANDBOX_URL: url,
  SANDBOX_KEY: key,
  SANDBOX_NAMESPACE: namespace,
  TERM: 'xterm',
};

function required(k) {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set (see mk/sdk.mk)`);
  return v;
}

const sbx = (args) => {
  const r = spawnSync(SBX, args, { env });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
};

/**
 * `sbx shell NAME` in a ROWS x COLS pty: type(text) sends keystrokes, resize(rows, cols) resizes
 * the window, until(pattern) waits for the terminal's output since the last mark to match, exited
 * resolves with the CLI's exit status.
 */
function terminal(rows, cols) {
  const child = spawn('python3', [PTY_RUN, String(rows), String(cols), '--', SBX, 'shell', name], {
    env,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  });
  let output = '';
  let from = 0;
  let waiter;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (c) => {
    output += c;
    waiter?.();
  });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c.toString()));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    exited,
    type: (text) => child.stdin.write(text),
    resize: (r, c) => child.stdio[3].write(`resize ${r} ${c}\n`),
    close: () => child.kill(),
    /** Resolves with the match once the output after the last mark matches; moves the mark past it. */
    until: (pattern, what) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(output.slice(from));
          if (!m) return;
          clearTimeout(timer);
          waiter = undefined;
          from += m.index + m[0].length;
          resolve(m);
        };
        const timer = setTimeout(() => {
          waiter = undefined;
          reject(
            new Error(
              `no ${what} within ${STEP_MS} ms; terminal: ${JSON.stringify(output.slice(from))}; stderr: ${stderr}`,
            ),
          );
        }, STEP_MS);
        waiter = check;
        check();
        exited.then((code) => {
          if (waiter === check) {
            clearTimeout(timer);
            reject(
              new Error(
                `sbx shell exited (${code}) before ${what}; terminal: ${JSON.stringify(output)}; stderr: ${stderr}`,
              ),
            );
          }
        });
      }),
  };
}

describe(`sbx shell against ${url}`, { skip: noTerminal && `SBX_E2E_NO_TERMINAL: ${noTerminal}` }, () => {
  before(() => {
    const r = sbx(['create', name, '--wait', '--timeout', '120s']);
    assert.equal(r.code, 0, r.stderr);
  });

  after(() => {
    sbx(['delete', name]);
  });

  it(
    'a person at a terminal: stty size follows a resize, a command runs, exit 3 is the CLI status',
    { timeout: 180_000 },
    async () => {
      const t = terminal(24, 80);
      try {
        // Each command prints a marker computed by the shell ($((...))), so what is matched is the
        // shell's output, never the terminal's echo of what was typed.
        t.type('stty size; echo "size-$((40+2))"\r');
        const [initial] = await t.until(/(\d+ \d+)\r*\n(?:[^\n]*\n)*?size-42/, 'the first stty size');
        assert.match(initial, /^24 80\r*\n/);

        // A resize reaches the remote terminal asynchronously (SIGWINCH, then a resize message):
        // asked again, a bounded number of times, until it shows the new size.
        t.resize(33, 101);
        const sizes = [];
        for (let i = 0; i < 20 && sizes.at(-1) !== '33 101'; i++) {
          t.type(`stty size; echo "resized-$((${i}+1000))"\r`);
          const m = await t.until(
            new RegExp(`(\\d+ \\d+)\\r*\\n(?:[^\\n]*\\n)*?resized-${i + 1000}`),
            `stty size #${i}`,
          );
          sizes.push(m[1]);
        }
        console.log(`stty size after the resize to 33x101: ${sizes.join(', ')}`);
        assert.equal(sizes.at(-1), '33 101');

        t.type('echo "hello from $((6*7)) in $PWD"\r');
        await t.until(/hello from 42 in \/\S+/, 'the echo');

        t.type('exit 3\r');
        assert.equal(await t.exited, 3);
      } finally {
        t.close();
      }
    },
  );
});
