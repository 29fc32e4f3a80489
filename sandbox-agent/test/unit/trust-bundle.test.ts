/** The egress trust bundle: system CAs + the interception CA, kept current, written atomically. */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CA_MAX_BYTES, startTrustBundle, type TrustBundle } from '../../src/egress/trust-bundle.js';
import { createLogger } from '../../src/log.js';
import { TestAgent } from './helpers/test-agent.js';

/** A PEM block; the bundle checks structure only, so the body need not be a real certificate. */
const pem = (body: string): string => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;

const SYSTEM = `# public CAs\n${pem('UFVCTElDMQ==')}${pem('UFVCTElDMg==')}`;
const CA = pem('SU5URVJDRVBUSU9OMQ==');
const CA2 = pem('SU5URVJDRVBUSU9OLVJPVEFURUQtMg==');

interface Logged {
  level: string;
  msg: string;
  [field: string]: unknown;
}

describe('startTrustBundle', () => {
  let dir: string;
  let caFile: string;
  let systemBundle: string;
  let bundleFile: string;
  let lines: string[];
  let bundle: TrustBundle | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sbx-trust-'));
    caFile = join(dir, 'ca.crt');
    systemBundle = join(dir, 'ca-certificates.crt');
    bundleFile = join(dir, 'out', 'nested', 'ca-bundle.pem');
    writeFileSync(systemBundle, SYSTEM);
    lines = [];
  });
  afterEach(() => {
    bundle?.close();
    bundle = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (): TrustBundle => {
    bundle = startTrustBundle({
      caFile,
      bundleFile,
      systemBundle,
      intervalMs: 60_000,
      logger: createLogger('debug', (line) => lines.push(line)),
    });
    return bundle;
  };
  const content = (): string => readFileSync(bundleFile, 'utf8');
  const logged = (level: string): Logged[] =>
    lines.map((line) => JSON.parse(line) as Logged).filter((line) => line.level === level);

  it('writes the system bundle then the CA, creating the directory, mode 0644', () => {
    writeFileSync(caFile, CA);
    start();
    expect(content()).toBe(`${SYSTEM}\n${CA}`);
    expect(statSync(bundleFile).mode & 0o777).toBe(0o644);
    expect(statSync(join(dir, 'out', 'nested')).isDirectory()).toBe(true);
    expect(logged('info')).toEqual([
      expect.objectContaining({
        msg: 'egress trust bundle written',
        caPresent: true,
        bytes: Buffer.byteLength(`${SYSTEM}\n${CA}`),
      }),
    ]);
    expect(logged('warn')).toEqual([]);
    // Nothing changed: no rewrite, and no temp file left beside the bundle.
    expect(bundle?.refresh()).toBe(false);
    expect(readdirSync(join(dir, 'out', 'nested'))).toEqual(['ca-bundle.pem']);
  });

  it('follows the CA as it appears, changes and goes away', () => {
    const trust = start();
    expect(content()).toBe(SYSTEM);
    expect(logged('info')[0]).toMatchObject({ caPresent: false });
    expect(logged('warn')).toEqual([]); // an absent CA is expected (the ConfigMap is optional)

    writeFileSync(caFile, CA);
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(`${SYSTEM}\n${CA}`);

    writeFileSync(caFile, CA2);
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(`${SYSTEM}\n${CA2}`);

    unlinkSync(caFile);
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(SYSTEM);
    expect(trust.refresh()).toBe(false);
    expect(logged('info').map((line) => line.caPresent)).toEqual([false, true, true, false]);
  });

  it('sees a ConfigMap-style update (a symlink swap to a new file)', () => {
    // The kubelet's layout: ca.crt -> ..data/ca.crt, ..data -> a timestamped directory.
    const mount = join(dir, 'mount');
    mkdirSync(join(mount, 'v1'), { recursive: true });
    mkdirSync(join(mount, 'v2'));
    writeFileSync(join(mount, 'v1', 'ca.crt'), CA);
    writeFileSync(join(mount, 'v2', 'ca.crt'), CA2);
    symlinkSync('v1', join(mount, '..data'));
    symlinkSync('..data/ca.crt', join(mount, 'ca.crt'));
    caFile = join(mount, 'ca.crt');
    const trust = start();
    expect(content()).toBe(`${SYSTEM}\n${CA}`);
    symlinkSync('v2', join(mount, '..data_tmp'));
    renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(`${SYSTEM}\n${CA2}`);
  });

  it('leaves out a CA that is not PEM or too large, warning once per distinct problem', () => {
    writeFileSync(caFile, Buffer.from([0x30, 0x82, 0x01, 0x0a, 0x02, 0x82])); // DER, not PEM
    const trust = start();
    expect(content()).toBe(SYSTEM);

    writeFileSync(caFile, 'not a certificate, still not PEM');
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(SYSTEM);

    writeFileSync(caFile, `${CA}${'#'.repeat(CA_MAX_BYTES)}`);
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(SYSTEM);

    expect(logged('warn')).toEqual([
      expect.objectContaining({ input: 'ca', file: caFile, problem: 'holds no PEM certificate' }),
      expect.objectContaining({ input: 'ca', file: caFile, problem: `larger than ${CA_MAX_BYTES} bytes` }),
    ]);
    expect(logged('info').map((line) => line.caPresent)).toEqual([false, false, false]);

    writeFileSync(caFile, CA);
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(`${SYSTEM}\n${CA}`);
  });

  it('copies only whole certificate blocks of the CA file', () => {
    writeFileSync(
      caFile,
      `subject=CN=egress\n${CA}-----BEGIN PRIVATE KEY-----\nS0VZ\n-----END PRIVATE KEY-----\n` +
        '-----BEGIN CERTIFICATE-----\nQ1VU',
    );
    start();
    expect(content()).toBe(`${SYSTEM}\n${CA}`);
  });

  it('holds only the CA (or nothing) without a system bundle', () => {
    unlinkSync(systemBundle);
    writeFileSync(caFile, CA);
    const trust = start();
    expect(content()).toBe(CA);
    expect(logged('warn')).toEqual([
      expect.objectContaining({ input: 'system', file: systemBundle, problem: 'missing' }),
    ]);

    unlinkSync(caFile);
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe('');
    expect(logged('warn')).toHaveLength(1);

    writeFileSync(systemBundle, SYSTEM);
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(SYSTEM);
  });

  it('ignores a directory in place of the CA', () => {
    mkdirSync(caFile);
    start();
    expect(content()).toBe(SYSTEM);
    expect(logged('warn')).toEqual([expect.objectContaining({ input: 'ca', problem: 'not a regular file' })]);
  });

  it('replaces the bundle atomically: a reader of the old file keeps it whole', () => {
    writeFileSync(caFile, CA);
    const trust = start();
    const oldInode = statSync(bundleFile).ino;
    const reader = openSync(bundleFile, 'r');
    try {
      writeFileSync(caFile, CA2);
      expect(trust.refresh()).toBe(true);
      expect(content()).toBe(`${SYSTEM}\n${CA2}`);
      expect(statSync(bundleFile).ino).not.toBe(oldInode);
      const old = Buffer.alloc(64 * 1024);
      const n = readSync(reader, old, 0, old.length, 0);
      expect(old.toString('utf8', 0, n)).toBe(`${SYSTEM}\n${CA}`);
    } finally {
      closeSync(reader);
    }
  });

  it('puts back a bundle removed or edited in the sandbox', () => {
    writeFileSync(caFile, CA);
    const trust = start();
    unlinkSync(bundleFile);
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(`${SYSTEM}\n${CA}`);
    writeFileSync(bundleFile, 'edited');
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(`${SYSTEM}\n${CA}`);
  });

  it('fails the start when the bundle cannot be written, and only warns later', () => {
    bundleFile = join(systemBundle, 'ca-bundle.pem'); // under a regular file
    expect(() => start()).toThrow(`cannot write the egress trust bundle ${bundleFile}`);

    bundleFile = join(dir, 'out', 'ca-bundle.pem');
    writeFileSync(caFile, CA);
    const trust = start();
    rmSync(join(dir, 'out'), { recursive: true });
    writeFileSync(join(dir, 'out'), 'a file where the directory was');
    expect(trust.refresh()).toBe(false);
    expect(trust.refresh()).toBe(false);
    expect(logged('warn')).toEqual([expect.objectContaining({ input: 'write', file: bundleFile })]);
    unlinkSync(join(dir, 'out'));
    expect(trust.refresh()).toBe(true);
    expect(content()).toBe(`${SYSTEM}\n${CA}`);
  });
});

describe('the agent and the egress trust bundle', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sbx-trust-agent-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the bundle before it listens when the CA file is configured', async () => {
    const caFile = join(dir, 'ca.crt');
    const bundleFile = join(dir, 'bundle', 'ca-bundle.pem');
    const systemBundle = join(dir, 'system.pem');
    writeFileSync(caFile, CA);
    writeFileSync(systemBundle, SYSTEM);
    const agent = await TestAgent.start(
      { egressCaFile: caFile },
      { egress: { bundleFile, systemBundle, intervalMs: 60_000 } },
    );
    try {
      expect(readFileSync(bundleFile, 'utf8')).toBe(`${SYSTEM}\n${CA}`);
      expect(agent.logs.some((line) => line.includes('egress trust bundle written'))).toBe(true);
    } finally {
      await agent.stop();
    }
  });
});
