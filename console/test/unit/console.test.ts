/** The console's pure parts: where the gateway is, the terminal's subprotocols, errors, listings, the page. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from '@jest/globals';
import { errorFromProblem } from '@sandbox-platform/client';

import {
  CONSOLE_PROTOCOL,
  base64url,
  describeSignInError,
  gatewayBase,
  terminalProtocols,
  webSocketUrl,
} from '../../src/api.js';
import { LISTING_COMMAND, joinPath, parentPath, parseListing } from '../../src/listing.js';
import { stripAnsi } from '../../src/views/code.js';

const here = dirname(fileURLToPath(import.meta.url));

describe('gateway address', () => {
  it('is the parent of the console folder, also behind a path prefix', () => {
    expect(gatewayBase('http://10.0.0.1/console/')).toBe('http://10.0.0.1');
    expect(gatewayBase('https://example.com/sandbox/console/?x=1#y')).toBe('https://example.com/sandbox');
    expect(webSocketUrl('https://example.com/sandbox', '/v1/sessions/a/pty?cols=80')).toBe(
      'wss://example.com/sandbox/v1/sessions/a/pty?cols=80',
    );
    expect(webSocketUrl('http://10.0.0.1', '/v1/x')).toBe('ws://10.0.0.1/v1/x');
  });
});

describe('terminal subprotocols', () => {
  it('carry the key as a base64url token, after the console protocol', () => {
    const key = 'k+/=é-0123456789abcdefghij';
    const [first, second] = terminalProtocols(key);
    expect(first).toBe(CONSOLE_PROTOCOL);
    expect(second).toMatch(/^sandbox-key\.[A-Za-z0-9_-]+$/);
    expect(Buffer.from(second!.slice('sandbox-key.'.length), 'base64url').toString('utf8')).toBe(key);
    expect(base64url('')).toBe('');
  });
});

describe('sign-in errors', () => {
  it('say plainly that a key was refused', () => {
    const refused = errorFromProblem(
      401,
      {
        type: 'https://sandbox.dev/problems/unauthorized',
        title: 'A valid API key is required',
        status: 401,
        detail: 'invalid API key',
      },
      null,
    );
    expect(describeSignInError(refused)).toBe(
      'The API key was refused (401 unauthorized: invalid API key). Check the key and sign in again.',
    );
    const forbidden = errorFromProblem(
      403,
      {
        type: 'https://sandbox.dev/problems/forbidden',
        title: 'x',
        status: 403,
        detail: 'this API key may not use namespace b',
      },
      null,
    );
    expect(describeSignInError(forbidden)).toMatch(/^This API key may not use that namespace/);
  });
});

describe('listings', () => {
  const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

  it('parses find records, folders first, and skips what is malformed', () => {
    const out = enc(
      'f\t12\tb.txt\0d\t4096\tsrc\0f\t3\tname\twith tab\0' +
        'garbage\0f\tx\tbad\0ff\t1\tbad\0f\t1\ta/b\0f\t5\t\0',
    );
    expect(parseListing(out)).toEqual([
      { type: 'd', size: 4096, name: 'src' },
      { type: 'f', size: 12, name: 'b.txt' },
      { type: 'f', size: 3, name: 'name\twith tab' },
    ]);
  });

  it('passes the folder in the environment, never in the command', () => {
    expect(LISTING_COMMAND).toContain('"${SBX_DIR:-.}"');
    expect(LISTING_COMMAND).toMatch(/head -z -n 1000$/);
  });

  it('joins and climbs workspace paths', () => {
    expect(joinPath('', 'a')).toBe('a');
    expect(joinPath('x/y/', 'a')).toBe('x/y/a');
    expect(parentPath('x/y')).toBe('x');
    expect(parentPath('x')).toBe('');
  });
});

describe('index.html', () => {
  const html = readFileSync(join(here, '../../src/index.html'), 'utf8');

  it('has no inline script or event handler, and takes the nonce in its script and stylesheet', () => {
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts).toHaveLength(1);
    expect(scripts[0]![1]).toContain('src="console.js"');
    expect(scripts[0]![2]!.trim()).toBe('');
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).not.toMatch(/javascript:/i);
    expect(html.match(/__CSP_NONCE__/g)).toHaveLength(2);
  });
});

describe('code tab', () => {
  it('shows tracebacks without terminal colours', () => {
    expect(stripAnsi('\u001b[0;31mZeroDivisionError\u001b[0m: division by zero')).toBe(
      'ZeroDivisionError: division by zero',
    );
  });
});
