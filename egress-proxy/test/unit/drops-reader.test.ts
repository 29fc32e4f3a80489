/**
 * The drop reader (src/drops/reader.ts): lines are split with a bound (a longer line is dropped
 * whole, also when it arrives in pieces), each line is validated field by field (addresses,
 * protocol, ports only with TCP and UDP, no other field), and the helper is restarted when it exits
 * and given up on (onFatal) when it keeps failing at start. The helper is a stand-in Node script
 * here; the real one against the kernel is nflog-helper.test.ts.
 */
import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';

import { DropReader, LineSplitter, parseDropLine, type ReaderLog } from '../../src/drops/reader.js';

const quiet: ReaderLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('LineSplitter', () => {
  it('joins pieces into lines and keeps an unfinished line for the next chunk', () => {
    const s = new LineSplitter(16);
    expect(s.push(Buffer.from('ab'))).toEqual([]);
    expect(s.push(Buffer.from('c\nde\n\nf'))).toEqual(['abc', 'de', '']);
    expect(s.push(Buffer.from('g\n'))).toEqual(['fg']);
    expect(s.tooLong).toBe(0);
  });

  it('drops a line longer than the bound whole, also when it arrives in pieces, and goes on', () => {
    const s = new LineSplitter(8);
    expect(s.push(Buffer.from('12345678\n123456789\nok\n'))).toEqual(['12345678', 'ok']);
    expect(s.tooLong).toBe(1);
    expect(s.push(Buffer.from('12345'))).toEqual([]);
    expect(s.push(Buffer.from('6789'))).toEqual([]); // over the bound: nothing kept
    expect(s.push(Buffer.from('x'.repeat(10_000)))).toEqual([]);
    expect(s.push(Buffer.from('\nnext\n'))).toEqual(['next']);
    expect(s.tooLong).toBe(2);
  });
});

describe('parseDropLine', () => {
  it('accepts the helper forms: tcp/udp with ports, icmp and other without, IPv4 and IPv6', () => {
    expect(
      parseDropLine('{"src":"10.1.2.3","dst":"1.2.3.4","proto":"tcp","sport":40000,"dport":443}'),
    ).toEqual({
      src: '10.1.2.3',
      dst: '1.2.3.4',
      proto: 'tcp',
      sport: 40000,
      dport: 443,
    });
    expect(
      parseDropLine('{"src":"fd00::5","dst":"2001:db8::1","proto":"udp","sport":0,"dport":65535}'),
    ).toMatchObject({
      proto: 'udp',
      dport: 65535,
    });
    expect(parseDropLine('{"src":"10.1.2.3","dst":"1.2.3.4","proto":"icmp"}')).toEqual({
      src: '10.1.2.3',
      dst: '1.2.3.4',
      proto: 'icmp',
    });
    expect(parseDropLine('{"src":"10.1.2.3","dst":"1.2.3.4","proto":"other"}')).toMatchObject({
      proto: 'other',
    });
  });

  it.each([
    ['not JSON', '{"src":'],
    ['not an object', '[1]'],
    ['not an object', 'null'],
    ['src', '{"src":"10.1.2","dst":"1.2.3.4","proto":"icmp"}'],
    ['src', '{"src":"evil.example","dst":"1.2.3.4","proto":"icmp"}'],
    ['dst', '{"src":"10.1.2.3","dst":"1.2.3.4 ","proto":"icmp"}'],
    ['dst', '{"src":"10.1.2.3","dst":7,"proto":"icmp"}'],
    ['dst', '{"src":"10.1.2.3","dst":"fe80::1%eth0","proto":"icmp"}'],
    ['proto', '{"src":"10.1.2.3","dst":"1.2.3.4","proto":"sctp"}'],
    ['sport', '{"src":"10.1.2.3","dst":"1.2.3.4","proto":"tcp","dport":443}'],
    ['dport', '{"src":"10.1.2.3","dst":"1.2.3.4","proto":"tcp","sport":1,"dport":65536}'],
    ['dport', '{"src":"10.1.2.3","dst":"1.2.3.4","proto":"udp","sport":1,"dport":1.5}'],
    ['dport', '{"src":"10.1.2.3","dst":"1.2.3.4","proto":"udp","sport":1,"dport":"53"}'],
    ['ports without tcp or udp', '{"src":"10.1.2.3","dst":"1.2.3.4","proto":"icmp","dport":1}'],
    ['unknown field ageMs', '{"src":"10.1.2.3","dst":"1.2.3.4","proto":"icmp","ageMs":1}'],
    ['unknown field __proto__', '{"src":"10.1.2.3","dst":"1.2.3.4","proto":"icmp","__proto__":{}}'],
  ])('refuses (%s): %s', (reason, line) => {
    expect(parseDropLine(line)).toBe(reason);
  });
});

/** A stand-in helper: a Node script run by the reader instead of sandbox-nflog. */
const script = (body: string) => (command: string, args: readonly string[]) =>
  spawn(process.execPath, ['-e', body, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });

describe('DropReader', () => {
  it('hands on valid drops, counts refused and overlong lines, restarts the helper when it exits', async () => {
    const drops: unknown[] = [];
    const errors: unknown[] = [];
    const reader = new DropReader({
      command: 'helper',
      args: ['100'],
      // Each run: one good line (in two writes), one refused, one overlong, then exit 3.
      spawn: script(`
        const w = (s) => process.stdout.write(s);
        w('{"src":"10.0.0.9","dst":"1.1.1.1",'); setTimeout(() => {
          w('"proto":"udp","sport":5,"dport":53}\\n{"src":"x"}\\n' + 'y'.repeat(600) + '\\n');
          process.exitCode = 3;
        }, 20);`),
      onDrop: (d) => drops.push(d),
      onFatal: (reason) => errors.push(reason),
      log: { ...quiet, error: (msg, f) => errors.push({ msg, ...f }) },
      backoffMs: { initial: 10, max: 40 },
      quickExitMs: 0, // no run counts as a failed start here
    });
    reader.start();
    const deadline = Date.now() + 8000;
    while (reader.stats.restarts < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await reader.stop();
    expect(reader.stats.restarts).toBeGreaterThanOrEqual(2);
    expect(drops.length).toBeGreaterThanOrEqual(2);
    expect(drops[0]).toEqual({ src: '10.0.0.9', dst: '1.1.1.1', proto: 'udp', sport: 5, dport: 53 });
    expect(reader.stats.invalid).toBeGreaterThanOrEqual(2);
    expect(reader.stats.tooLong).toBeGreaterThanOrEqual(2);
    expect(errors[0]).toMatchObject({ msg: 'nflog helper exited; restarting', code: 3 });
  });

  it('gives up through onFatal when the helper keeps failing at start, naming its last exit', async () => {
    const stderr: unknown[] = [];
    const fatal = await new Promise<string>((resolve) => {
      const reader = new DropReader({
        command: 'helper',
        args: ['100'],
        spawn: script(
          `process.stderr.write('sandbox-nflog: bind NFLOG group 100: Operation not permitted\\n'); process.exit(1);`,
        ),
        onDrop: () => undefined,
        onFatal: resolve,
        log: { ...quiet, warn: (msg, f) => stderr.push(f?.stderr) },
        backoffMs: { initial: 5, max: 10 },
        maxQuickExits: 3,
      });
      reader.start();
    });
    expect(fatal).toMatch(/failed 3 times in a row at start \(last: \{"code":1,"signal":null\}\)/);
    expect(stderr).toContain('sandbox-nflog: bind NFLOG group 100: Operation not permitted');
  });

  it('a helper that cannot be started at all (ENOENT) is a failed start too', async () => {
    const fatal = await new Promise<string>((resolve) => {
      new DropReader({
        command: '/nonexistent/sandbox-nflog',
        args: ['100'],
        onDrop: () => undefined,
        onFatal: resolve,
        log: quiet,
        backoffMs: { initial: 5, max: 10 },
        maxQuickExits: 2,
      }).start();
    });
    expect(fatal).toMatch(/ENOENT/);
  });
});
