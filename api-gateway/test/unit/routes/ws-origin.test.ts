/**
 * The pure parts of the port route and WebSocket hardening (issue 25): which Origins may open a
 * WebSocket, GATEWAY_ALLOWED_ORIGINS parsing, and the raw upstream path. The routes themselves
 * are tested in test/unit/interactive/ports-hardening.test.ts.
 */
import { describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../../src/config.js';
import { rawUpstreamPath } from '../../../src/routes/ports/index.js';
import { originAllowed } from '../../../src/routes/ws-origin.js';
import { TEST_ENV } from '../../helpers/app.js';

describe('originAllowed', () => {
  const allowed = ['https://app.example', 'http://localhost:3000'];
  const cases: Array<[string | undefined, string | undefined, boolean]> = [
    [undefined, 'gw.example', true], // not a browser
    ['https://gw.example', 'gw.example', true], // same origin
    ['https://gw.example', 'gw.example:443', true], // Host with the default port spelled out
    ['http://gw.example:8080', 'gw.example:8080', true],
    ['HTTPS://GW.EXAMPLE', 'gw.example', true],
    ['https://app.example', 'gw.example', true], // listed
    ['http://localhost:3000', 'gw.example', true],
    ['https://evil.example', 'gw.example', false],
    ['https://gw.example.evil.example', 'gw.example', false],
    ['https://gw.example:8443', 'gw.example', false], // another port is another origin
    ['http://app.example', 'gw.example', false], // another scheme is another origin
    ['null', 'gw.example', false], // sandboxed frames, file:
    ['not a url', 'gw.example', false],
    ['https://evil.example', undefined, false],
  ];
  it.each(cases)('Origin %s, Host %s: %s', (origin, host, ok) => {
    expect(originAllowed(origin, host, allowed)).toBe(ok);
  });
});

describe('GATEWAY_ALLOWED_ORIGINS', () => {
  it('is a comma list of http(s) origins, normalised', () => {
    const config = loadConfig({
      ...TEST_ENV,
      GATEWAY_ALLOWED_ORIGINS: 'https://App.Example/, http://x:8080',
    });
    expect(config.allowedOrigins).toEqual(['https://app.example', 'http://x:8080']);
    expect(loadConfig(TEST_ENV).allowedOrigins).toEqual([]);
  });

  it.each(['app.example', 'https://a.example/path', 'ftp://a.example', 'https://a.example?q', '*'])(
    'refuses %s',
    (value) => {
      expect(() => loadConfig({ ...TEST_ENV, GATEWAY_ALLOWED_ORIGINS: value })).toThrow(
        /GATEWAY_ALLOWED_ORIGINS: not an http\(s\) origin/,
      );
    },
  );

  it('port-route defaults: 64 sockets per key, 30 s idle, cookies not forwarded; the check on', () => {
    const config = loadConfig(TEST_ENV);
    expect(config.portProxy).toEqual({ maxSocketsPerKey: 64, idleTimeoutMs: 30_000, forwardCookies: false });
    expect(config.podIdentityCheck).toBe(true);
  });
});

describe('rawUpstreamPath', () => {
  const cases: Array<[string, string]> = [
    ['/v1/sessions/s/ports/8000', '/'],
    ['/v1/sessions/s/ports/8000?q=1', '/?q=1'],
    ['/v1/sessions/s/ports/8000/', '/'],
    ['/v1/sessions/s/ports/8000/a%2Fb?x=%3F', '/a%2Fb?x=%3F'],
    ['/v1/sessions/d%65mo/ports/80%300/x', '/x'],
    ['/v1/sessions/s/ports/8000//double//slash', '//double//slash'],
    ['/v1/sessions/s/ports/8000/q?a/b?c', '/q?a/b?c'],
  ];
  it.each(cases)('%s -> %s', (raw, path) => {
    expect(rawUpstreamPath(raw)).toBe(path);
  });
});
