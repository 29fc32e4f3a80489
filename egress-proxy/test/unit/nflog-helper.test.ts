/**
 * The NFLOG helper (test-e2e/images/src/sandbox-nflog.c, compiled here with the host's gcc)
 * against the real kernel, in a network namespace of its own: an iptables rule logs a TCP SYN and
 * UDP datagrams (IPv4 and IPv6) to an NFLOG group, the helper prints one valid JSON line each;
 * without the rule nothing is printed (the check can fail); a second listener of the group and a
 * helper without CAP_NET_ADMIN exit 1 naming why; and the whole path, helper -> reader ->
 * reporter -> POST /v1/drops -> a session's audit record, on loopback. Needs root (netns,
 * iptables, NFLOG): otherwise the block is skipped and its title says why.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { auditServer } from '../../src/audit/server.js';
import { AuditStore } from '../../src/audit/store.js';
import { DropReader, parseDropLine } from '../../src/drops/reader.js';
import { DropReporter, httpDropSender } from '../../src/drops/reporter.js';

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), '../../../test-e2e/images/src/sandbox-nflog.c');
const NS = `nflog-test-${process.pid}`;
const GROUP = '4242';
const V4 = '10.77.0.1';
const V6 = 'fd77::1';

const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const notRunReason = (): string | undefined => {
  if (process.getuid?.() !== 0) return 'needs root (network namespace, iptables, NFLOG bind)';
  const missing = ['ip', 'iptables', 'ip6tables', 'gcc'].filter((c) => !has(c));
  return missing.length > 0 ? `needs ${missing.join(', ')} on the host` : undefined;
};
const reason = notRunReason();
const describeRoot = reason === undefined ? describe : describe.skip;
const title = `sandbox-nflog against the kernel${reason ? ` (NOT RUN: ${reason})` : ''}`;
if (reason) console.warn(`nflog-helper.test.ts NOT RUN: ${reason}`);

const run = (cmd: string, args: string[]): void => {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr || r.error}`);
};
const inNs = (args: string[]): void => run('ip', ['netns', 'exec', NS, ...args]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The helper's rule set: a TCP SYN to port 9, UDP to port 53, over IPv4 and IPv6. */
function addRules(): void {
  for (const [tool, dst] of [
    ['iptables', V4],
    ['ip6tables', V6],
  ] as const) {
    inNs([
      tool,
      '-A',
      'OUTPUT',
      '-d',
      dst,
      '-p',
      'tcp',
      '--dport',
      '9',
      '--tcp-flags',
      'SYN,ACK',
      'SYN',
      '-j',
      'NFLOG',
      '--nflog-group',
      GROUP,
    ]);
    inNs([
      tool,
      '-A',
      'OUTPUT',
      '-d',
      dst,
      '-p',
      'udp',
      '--dport',
      '53',
      '-j',
      'NFLOG',
      '--nflog-group',
      GROUP,
    ]);
  }
}
const flushRules = (): void => {
  inNs(['iptables', '-F', 'OUTPUT']);
  inNs(['ip6tables', '-F', 'OUTPUT']);
};

/** Sends, from inside the namespace, one TCP SYN (to a closed port) and UDP datagrams. */
function sendTraffic(): void {
  const script = `
    const net = require('node:net'), dgram = require('node:dgram');
    const s = net.connect(9, '${V4}'); s.on('error', () => {});
    const u4 = dgram.createSocket('udp4'), u6 = dgram.createSocket('udp6');
    u4.send('x', 53, '${V4}', () => u4.close());
    u6.send('x', 53, '${V6}', () => u6.close());
    setTimeout(() => process.exit(0), 200);`;
  inNs([process.execPath, '-e', script]);
}

/** A helper in the namespace, its stdout lines collected; resolves once the group is bound. */
async function startHelper(
  helper: string,
): Promise<{ child: ChildProcess; lines: string[]; stderr: string[] }> {
  const child = spawn('ip', ['netns', 'exec', NS, helper, GROUP], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const stderr: string[] = [];
  let buf = '';
  child.stdout.on('data', (c: Buffer) => {
    buf += c.toString('utf8');
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr.on('data', (c: Buffer) => stderr.push(c.toString('utf8')));
  await waitBound();
  return { child, lines, stderr };
}

/** Waits until the namespace's nfnetlink_log lists GROUP (the helper has bound it). */
async function waitBound(): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const r = spawnSync('ip', ['netns', 'exec', NS, 'cat', '/proc/net/netfilter/nfnetlink_log'], {
      encoding: 'utf8',
    });
    if (r.stdout.split('\n').some((l) => l.trim().split(/\s+/)[0] === GROUP)) return;
    if (Date.now() > deadline) throw new Error(`group ${GROUP} not bound within 5 s`);
    await sleep(50);
  }
}

async function stopHelper(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const closed = new Promise((r) => child.once('close', r));
  child.kill('SIGTERM');
  await closed;
}

describeRoot(title, () => {
  let dir: string;
  let helper: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nflog-'));
    helper = join(dir, 'sandbox-nflog');
    await promisify(execFile)('gcc', ['-O1', '-Wall', '-Wextra', '-Werror', '-o', helper, SOURCE]);
    spawnSync('ip', ['netns', 'del', NS]); // a leftover of a killed run
    run('ip', ['netns', 'add', NS]);
    inNs(['ip', 'link', 'set', 'lo', 'up']);
    inNs(['ip', 'addr', 'add', `${V4}/32`, 'dev', 'lo']);
    inNs(['ip', '-6', 'addr', 'add', `${V6}/128`, 'dev', 'lo', 'nodad']);
  }, 60_000);

  afterAll(async () => {
    spawnSync('ip', ['netns', 'del', NS]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('prints one valid JSON line per logged packet: a TCP SYN, UDP over IPv4 and IPv6', async () => {
    addRules();
    const h = await startHelper(helper);
    try {
      sendTraffic();
      const deadline = Date.now() + 5000;
      while (h.lines.length < 3 && Date.now() < deadline) await sleep(50);
      await sleep(200); // anything more would show here
      console.log(`sandbox-nflog output:\n${h.lines.join('\n')}`);
      const drops = h.lines.map(parseDropLine);
      expect(drops).toEqual([
        { src: V4, dst: V4, proto: 'tcp', sport: expect.any(Number), dport: 9 },
        { src: V4, dst: V4, proto: 'udp', sport: expect.any(Number), dport: 53 },
        { src: V6, dst: V6, proto: 'udp', sport: expect.any(Number), dport: 53 },
      ]);
      expect(h.stderr.join('')).toBe('');
    } finally {
      await stopHelper(h.child);
      flushRules();
    }
  }, 30_000);

  it('without the NFLOG rule the same traffic prints nothing (the check above can fail)', async () => {
    const h = await startHelper(helper);
    try {
      sendTraffic();
      await sleep(1500);
      console.log(`sandbox-nflog output without the rule: ${JSON.stringify(h.lines)}`);
      expect(h.lines).toEqual([]);
    } finally {
      await stopHelper(h.child);
    }
  }, 30_000);

  it('a second listener of the group, and a helper without CAP_NET_ADMIN, exit 1 saying why', async () => {
    const first = await startHelper(helper);
    try {
      const second = spawnSync('ip', ['netns', 'exec', NS, helper, GROUP], {
        encoding: 'utf8',
        timeout: 5000,
      });
      expect(second.status).toBe(1);
      expect(second.stderr).toMatch(/bind NFLOG group 4242: .*another listener has the group/);
    } finally {
      await stopHelper(first.child);
    }
    if (has('setpriv')) {
      const noCap = spawnSync(
        'ip',
        ['netns', 'exec', NS, 'setpriv', '--bounding-set=-all', '--inh-caps=-all', helper, GROUP],
        {
          encoding: 'utf8',
          timeout: 5000,
        },
      );
      expect(noCap.status).toBe(1);
      expect(noCap.stderr).toMatch(/needs CAP_NET_ADMIN/);
    }
  }, 30_000);

  it('end to end on loopback: helper -> reader -> reporter -> POST /v1/drops -> the session’s audit record', async () => {
    addRules();
    const store = new AuditStore({
      dir: join(dir, 'audit'),
      key: Buffer.alloc(32, 1),
      retentionSeconds: 3600,
      maxRecordsPerSession: 100,
    });
    const server = auditServer(store, 'gw', () => undefined, {
      drops: {
        token: 'drops',
        sessions: {
          byAddress: (ip) => (ip === V4 ? { namespace: 'team-a', name: 's1', uid: 'u' } : undefined),
        },
      },
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const log = { info: () => undefined, warn: () => undefined, error: () => undefined };
    const reporter = new DropReporter({
      send: httpDropSender({
        auditUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        token: 'drops',
      }),
      log,
      batchMs: 100,
    });
    const reader = new DropReader({
      command: 'ip',
      args: ['netns', 'exec', NS, helper, GROUP],
      onDrop: (d) => reporter.push(d),
      onFatal: (why) => {
        throw new Error(why);
      },
      log,
    });
    try {
      reader.start();
      await waitBound();
      sendTraffic();
      const deadline = Date.now() + 5000;
      while (reporter.stats.sent < 3 && Date.now() < deadline) await sleep(50);
      expect(reporter.stats).toMatchObject({ sent: 3, recorded: 2, unknownSource: 1 }); // fd77::1 is nobody's
      const { records } = await store.records('team-a', 's1', 0, 10);
      expect(records.map((r) => [r.kind, r.outcome, r.detail.reason, r.detail.proto, r.detail.port])).toEqual(
        [
          ['egress', 'denied', 'direct', 'tcp', 9],
          ['egress', 'denied', 'direct', 'udp', 53],
        ],
      );
    } finally {
      await reader.stop();
      reporter.stop();
      await new Promise((r) => server.close(r));
      flushRules();
    }
  }, 30_000);
});
