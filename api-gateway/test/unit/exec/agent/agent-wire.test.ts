import { describe, expect, it } from '@jest/globals';

import {
  AgentProtocolError,
  MAX_HEAD_BYTES,
  ResponseParser,
  requestHead,
} from '../../../../src/exec/agent/agent-wire.js';

interface Parsed {
  status?: number;
  headers?: Record<string, string>;
  body: string;
  ended?: boolean;
  reusable?: boolean;
}

/** Feeds `pieces` one by one (split anywhere) and records what the parser reported. */
function parse(pieces: Array<string | Buffer>, method = 'POST'): Parsed & { parser: ResponseParser } {
  const out: Parsed = { body: '' };
  const parser = new ResponseParser(
    {
      onHead: (status, headers) => Object.assign(out, { status, headers }),
      onBody: (chunk) => (out.body += chunk.toString('latin1')),
      onEnd: (reusable) => Object.assign(out, { ended: true, reusable }),
    },
    method,
  );
  for (const p of pieces) parser.feed(typeof p === 'string' ? Buffer.from(p, 'latin1') : p);
  return { ...out, parser };
}

/** Every way of splitting `text` in two. */
function splits(text: string): string[][] {
  return Array.from({ length: text.length - 1 }, (_, i) => [text.slice(0, i + 1), text.slice(i + 1)]);
}

const FIXED = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"exit":0}\n';
const CHUNKED =
  'HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n' +
  '5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nx-trailer: y\r\n\r\n';

describe('requestHead', () => {
  it('writes the request line, host, token and body headers', () => {
    const body = Buffer.from('{"command":"true"}');
    expect(requestHead('10.0.0.1:8090', { method: 'POST', path: '/v1/exec', token: 'abc', body })).toBe(
      'POST /v1/exec HTTP/1.1\r\nhost: 10.0.0.1:8090\r\nauthorization: Bearer abc\r\n' +
        `accept: application/json\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
    );
    expect(requestHead('h:1', { method: 'GET', path: '/v1/files/a%20b', token: 't' })).toBe(
      'GET /v1/files/a%20b HTTP/1.1\r\nhost: h:1\r\nauthorization: Bearer t\r\naccept: application/json\r\n\r\n',
    );
  });

  it.each([
    ['a path with a space', { path: '/a b', token: 't' }],
    ['a path with CRLF', { path: '/a\r\nx: y', token: 't' }],
    ['a token with CRLF', { path: '/a', token: 't\r\nx: y' }],
  ])('refuses %s', (_what, r) => {
    expect(() => requestHead('h:1', { method: 'GET', ...r })).toThrow('invalid agent request');
  });
});

describe('ResponseParser', () => {
  it('parses a Content-Length answer in one piece and split at every byte', () => {
    for (const pieces of [[FIXED], ...splits(FIXED)]) {
      const r = parse(pieces);
      expect(r).toMatchObject({ status: 200, body: '{"exit":0}\n', ended: true, reusable: true });
      expect(r.headers).toEqual({ 'content-type': 'application/json', 'content-length': '11' });
    }
  });

  it('parses a chunked answer split at every byte, skipping extensions and trailers', () => {
    for (const pieces of [[CHUNKED], ...splits(CHUNKED)]) {
      expect(parse(pieces)).toMatchObject({ status: 200, body: 'hello world', ended: true, reusable: true });
    }
  });

  it('reads a body without framing until the connection closes, and does not reuse it', () => {
    const r = parse(['HTTP/1.1 200 OK\r\n\r\nabc', 'def']);
    expect(r.ended).toBeUndefined();
    expect(r.parser.close()).toBe(true);
    expect(r.body).toBe('abcdef');
  });

  it('ends bodiless answers at once and honours Connection: close and HTTP/1.0', () => {
    expect(parse(['HTTP/1.1 204 No Content\r\n\r\n'])).toMatchObject({ ended: true, reusable: true });
    expect(parse(['HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'])).toMatchObject({ ended: true });
    expect(
      parse(['HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n']),
    ).toMatchObject({ ended: true, reusable: false });
    expect(parse(['HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n'])).toMatchObject({ reusable: false });
  });

  it('says a cut-off answer was cut off', () => {
    const r = parse([FIXED.slice(0, -3)]);
    expect(r.parser.close()).toBe(false);
    expect(r.ended).toBeUndefined();
  });

  it.each([
    ['a status line that is not HTTP/1.x', 'HTTP/2 200 OK\r\n\r\n'],
    ['an interim 1xx answer', 'HTTP/1.1 100 Continue\r\n\r\n'],
    ['a bare LF in a header', 'HTTP/1.1 200 OK\r\nA: b\nContent-Length: 0\r\n\r\n'],
    ['a NUL in a header', 'HTTP/1.1 200 OK\r\nA: b\0\r\nContent-Length: 0\r\n\r\n'],
    ['a folded header', 'HTTP/1.1 200 OK\r\nA: b\r\n c\r\nContent-Length: 0\r\n\r\n'],
    ['a header name with a space', 'HTTP/1.1 200 OK\r\nContent Length: 0\r\n\r\n'],
    ['two Content-Length headers', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'],
    ['a non-numeric Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n'],
    [
      'Content-Length and Transfer-Encoding',
      'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n',
    ],
    ['an unknown transfer encoding', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'],
    ['a bad chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ['a chunk without its CRLF', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n'],
    ['bytes after the answer', `${FIXED}HTTP/1.1 200 OK\r\n`],
    ['a head above the limit', `HTTP/1.1 200 OK\r\nA: ${'x'.repeat(MAX_HEAD_BYTES)}`],
  ])('refuses %s', (_what, text) => {
    expect(() => parse([text])).toThrow(AgentProtocolError);
  });

  // The header regex is linear by construction (agent-wire.ts); MAX_HEAD_BYTES bounds the input
  // in any case, so this checks the refusal, not a time.
  it('trims optional whitespace around header values and refuses a bad value', () => {
    expect(parse(['HTTP/1.1 200 OK\r\nX-A: \t a  b \t\r\nContent-Length: 0\r\n\r\n']).headers).toEqual({
      'x-a': 'a  b',
      'content-length': '0',
    });
    const spaces = ' '.repeat(MAX_HEAD_BYTES - 100);
    expect(() => parse([`HTTP/1.1 200 OK\r\nX-A: a${spaces}\u000b${spaces.slice(0, 50)}\r\n\r\n`])).toThrow(
      AgentProtocolError,
    );
  });

  it('keeps header names such as constructor and __proto__ as plain keys', () => {
    const { headers } = parse([
      'HTTP/1.1 200 OK\r\nconstructor: a\r\n__proto__: b\r\ntoString: c\r\nContent-Length: 0\r\n\r\n',
    ]);
    // (an object literal cannot express an own __proto__ key, so the entries are compared)
    expect(Object.entries(headers!).sort()).toEqual([
      ['__proto__', 'b'],
      ['constructor', 'a'],
      ['content-length', '0'],
      ['tostring', 'c'],
    ]);
    expect(Object.getPrototypeOf(headers)).toBeNull();
  });

  it('refuses a head above the limit however it is split', () => {
    const pieces = Array.from({ length: 20 }, () => `A: ${'x'.repeat(1000)}\r\n`);
    expect(() => parse(['HTTP/1.1 200 OK\r\n', ...pieces])).toThrow('response head too large');
  });
});
