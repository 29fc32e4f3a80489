/**
 * The target of a plain HTTP request, read without the URL parser when the URL is one it keeps as
 * written: the same host, port, path and refusals as with `new URL` (the first implementation,
 * kept below as the reference), over hand-picked URLs and generated ones.
 */
import { describe, expect, it } from '@jest/globals';
import type { IncomingMessage } from 'node:http';

import { plainTarget, plainUrl } from '../../src/proxy.js';

type Target = ReturnType<typeof plainTarget>;

/** plainTarget's absolute-form branch as first written (new URL for every request). */
function refAbsolute(raw: string, hostHeader: string): Target {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { error: 'invalid URL' };
  }
  if (url.username || url.password)
    return { error: 'credentials in the URL are not allowed', host: url.hostname };
  if (hostHeader && hostHeader !== url.host.toLowerCase()) {
    return { error: 'the Host header does not match the URL', host: url.hostname };
  }
  return { host: url.hostname, port: Number(url.port || 80), path: `${url.pathname}${url.search}` };
}

const req = (url: string, host?: string): IncomingMessage =>
  ({ url, headers: host === undefined ? {} : { host } }) as unknown as IncomingMessage;

const PICKED = [
  'http://upstream.test:8080/',
  'http://upstream.test/',
  'http://upstream.test:80/x',
  'http://upstream.test:080/x',
  'http://upstream.test:0/x',
  'http://upstream.test:65535/x',
  'http://upstream.test:65536/x',
  'http://upstream.test:99999/x',
  'http://upstream.test:/x',
  'http://upstream.test',
  'http://upstream.test?q',
  'http://Upstream.Test/x',
  'http://upstream.test./x',
  'http://a..b/x',
  'http://-a.b-/x',
  'http://xn--nxasmq6b.com/x',
  'http://xn--a.com/x',
  'http://a.xn--zz/x',
  'http://127.0.0.1/x',
  'http://2130706433/x',
  'http://0x7f.1/x',
  'http://a.0x10/x',
  'http://a.1/x',
  'http://a.b1/x',
  'http://user:pw@upstream.test/x',
  'http://@upstream.test/x',
  'http://upstream.test/a/../b',
  'http://upstream.test/a/./b',
  'http://upstream.test/a/%2e%2E/b',
  'http://upstream.test/a/.%2e',
  'http://upstream.test/a/..',
  'http://upstream.test/a/...',
  'http://upstream.test/a/.b/..c',
  'http://upstream.test/simple/%2e%2e/admin',
  'http://upstream.test/a%2fb%5c',
  'http://upstream.test/a\\b',
  'http://upstream.test/a b',
  'http://upstream.test/a"b<c>`{d}|^',
  "http://upstream.test/it's?q='1'",
  'http://upstream.test/x?',
  'http://upstream.test/x??',
  'http://upstream.test/x?a=1&b=%zz#frag',
  'http://upstream.test/x#',
  'http://upstream.test/é',
  'http://upstream.test/%zz/%',
  'http://upstream.test//double//slash',
  'http://upstream.test/~user/_x-y.z!$&()*+,;=:@',
  'http://[::1]:8080/x',
  'http://[::ffff:127.0.0.1]/x',
  'http://a_b.test/x',
  'http://a.test:8080:9/x',
  'http://a.test\t/x',
];

/** A small deterministic PRNG (the cases are the same on every run). */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('plain HTTP targets without the URL parser', () => {
  it('gives what new URL gives for hand-picked URLs and Host headers', () => {
    for (const url of PICKED) {
      for (const host of [
        undefined,
        '',
        'upstream.test',
        'upstream.test:8080',
        'upstream.test:80',
        'UPSTREAM.test',
      ]) {
        expect([url, host, plainTarget(req(url, host))]).toEqual([
          url,
          host,
          refAbsolute(url, (host ?? '').toLowerCase()),
        ]);
      }
    }
  });

  it('gives what new URL gives for generated URLs, most of them without the parser', () => {
    const rand = prng(7);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const labels = ['a', 'up', 'stream', 'test', 'x-y', '-', '0', '12', '0x1f', 'xn--a', 'B', 'é', '', '_'];
    const ports = ['', '', '', ':80', ':8080', ':0', ':65535', ':65536', ':', ':08'];
    const pathChars = [
      'a',
      '/',
      '/',
      '.',
      '.',
      '%',
      '2e',
      '2E',
      '%2e',
      '?',
      '#',
      ' ',
      "'",
      '"',
      '~',
      '\\',
      'é',
      '@',
      ':',
      ';',
      '=',
      '&',
      '{',
      '|',
      '^',
      '`',
    ];
    // Every other URL from parts the fast path takes (and dots, which it must leave alone).
    const tameLabels = ['a', 'up', 'stream', 'test', 'x-y', 'b0', '9'];
    const tameChars = ['a', '/', '/', '.', '%2e', '%', '41', '?', '=', '&', '~', ':', '@', '(', "'"];
    let fast = 0;
    const differ: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const tame = i % 2 === 0;
      const host = Array.from({ length: 1 + Math.floor(rand() * 3) }, () =>
        pick(tame ? tameLabels : labels),
      ).join('.');
      const path = `/${Array.from({ length: Math.floor(rand() * 10) }, () => pick(tame ? tameChars : pathChars)).join('')}`;
      const url = `http://${host}${pick(ports)}${path}`;
      const hostHeader = rand() < 0.5 ? '' : (rand() < 0.5 ? host : `${host}${pick(ports)}`).toLowerCase();
      if (plainUrl(url) !== undefined) fast++;
      if (JSON.stringify(plainTarget(req(url, hostHeader))) !== JSON.stringify(refAbsolute(url, hostHeader)))
        differ.push(`${url} (host ${hostHeader})`);
    }
    expect(differ).toEqual([]);
    expect(fast).toBeGreaterThan(4000);
  });

  it('reads the usual absolute URL without the parser', () => {
    expect(plainUrl('http://pypi.org/simple/requests/?x=1')).toEqual({
      hostname: 'pypi.org',
      host: 'pypi.org',
      port: 80,
      path: '/simple/requests/?x=1',
      credentials: false,
    });
    expect(plainUrl('http://upstream.test:8080/')?.host).toBe('upstream.test:8080');
    for (const url of ['http://127.0.0.1/', 'http://a/../b', 'http://u@a/', 'http://a:70000/', 'http://A/'])
      expect(plainUrl(url)).toBeUndefined();
  });
});
