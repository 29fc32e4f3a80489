#!/usr/bin/env node
/**
 * A hostile sandbox agent: it listens where the real agent does and speaks just enough of the
 * agent's HTTP API (docs/architecture.md, "Agent HTTP API") to be reached, then misbehaves in the
 * way the request asks for. It is what a tenant who controls its own sandbox could put on port
 * 8090, and tests point the gateway at it to show that no answer can take the gateway down.
 *
 * One file, no dependencies outside node:*, so an image needs only `node` and this file.
 *
 *   PORT=8090 HOST=0.0.0.0 node hostile-agent.mjs          serve (HOST defaults to 0.0.0.0)
 *   PORT=8090 node hostile-agent.mjs probe                  exit 0 when /healthz answers 200
 *
 * The misbehaviour comes from the request: the exec `command` is `hostile:<mode>[:<bytes>]`
 * (POST /v1/exec and /v1/exec/stream), a file path is `hostile-<mode>[-<bytes>]` (GET and PUT
 * /v1/files/...). Anything else gets a well-behaved answer (exit 0, empty output; files are
 * accepted and discarded, GETs answer 404), so the same agent can serve a quiet tenant too.
 * Tokens are not checked: a hostile agent has no reason to.
 *
 * POST /v1/exec modes:
 *   tiny-chunks:N     a valid result with an N-byte stdout, chunked in 1-byte chunks (N default 12 MB)
 *   small-chunks:N    the same in 40-byte chunks (N default 12 MB): many pieces, none of them tiny
 *   nested:N          N bytes of `[[[[...]]]]` (default 4 MB), Content-Length framed
 *   many-keys:N       an object of N bytes of distinct keys `{"k0":0,"k1":0,...}` (default 4 MB)
 *   huge-output:N     a valid result whose stdout is N bytes (default 4 MB: over the 1 MiB cap)
 *   valid-max:N       a valid result at the cap: N control bytes (default 1 MiB) in stdout and in
 *                     stderr, 6 bytes each once JSON-escaped (about 12 MiB: the largest honest answer)
 *   oversized:N       Content-Length N (default 1 GB) and that many bytes, as fast as they drain
 *   endless           a chunked body that never ends
 *   bad-json          a truncated JSON object
 *   null              the JSON `null`
 *   wrong-types       a result with `exitCode: "abc"` and `stdout: 42`
 *   extra-fields      a valid result plus fields the contract does not have
 *   bad-http          a status line that is not HTTP
 *   hang              reads the request and never answers
 *   hang-body         sends the head and half of the body, then nothing
 *   big-problem:N     a 400 problem whose detail is N bytes (default 1 MB)
 *   slow-drip         a valid result, one byte every 50 ms
 * POST /v1/exec/stream modes:
 *   stream-endless    valid stdout events forever
 *   stream-tiny       1-byte stdout events forever
 *   stream-garbage    lines that are not JSON
 *   stream-long-line  one line that never ends
 *   stream-tiny-chunks valid events in 1-byte chunks, forever
 *   stream-wrong      events of the wrong shape
 * GET /v1/files/hostile-<mode>:
 *   endless           chunked bytes that never end
 *   huge              Content-Length 1 GB, bytes as fast as they drain
 *   tiny-chunks       4 MB in 1-byte chunks
 * PUT /v1/files/hostile-<mode>:
 *   no-read           never reads the body and never answers (the upload must wait, not pile up)
 *   slow-read         reads 16 KiB per second, then answers 201
 */
import http from 'node:http';

const PROBLEM_BASE = 'https://sandbox.dev/problems/';
const MB = 1_000_000;
const FILL = 64 * 1024;

/** A well-formed exec result. */
function result(fields = {}) {
  return {
    stdout: '',
    stderr: '',
    stdoutEncoding: 'utf-8',
    stderrEncoding: 'utf-8',
    exitCode: 0,
    durationMs: 1,
    truncated: false,
    timedOut: false,
    shellReset: false,
    ...fields,
  };
}

/** Writes raw bytes on the socket, waiting for it to drain; false once the peer is gone. */
function write(socket, data) {
  if (socket.destroyed) return Promise.resolve(false);
  if (socket.write(data)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok) => {
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    socket.on('drain', onDrain);
    socket.on('close', onClose);
  });
}

/** A raw response head (the server's own machinery is bypassed: the socket is ours). */
function head(status, headers) {
  const lines = [`HTTP/1.1 ${status} X`];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return lines.join('\r\n') + '\r\n\r\n';
}

/** 1-byte chunks of `text` (chunked transfer encoding framing), as one string. */
const oneByteChunks = (text) =>
  [...Buffer.from(text)].map((b) => `1\r\n${String.fromCharCode(b)}\r\n`).join('');

/**
 * Sends prefix, `n` times `fill` and suffix as a chunked body in 1-byte chunks, written in large
 * socket writes (so the gateway reads thousands of chunks per read), then the last chunk.
 */
async function tinyChunks(socket, prefix, fill, n, suffix) {
  return (
    (await write(socket, oneByteChunks(prefix))) &&
    (await repeat(socket, oneByteChunks(fill), n * 6)) &&
    write(socket, oneByteChunks(suffix) + '0\r\n\r\n')
  );
}

/** Repeats `unit` until `total` bytes were written (or the peer left). */
async function repeat(socket, unit, total = Infinity) {
  const block = Buffer.from(unit.repeat(Math.max(1, Math.floor(FILL / unit.length))));
  for (let sent = 0; sent < total;) {
    const n = Math.min(block.length, total - sent);
    if (!(await write(socket, n === block.length ? block : block.subarray(0, n)))) return false;
    sent += n;
  }
  return true;
}

/** One chunk of chunked transfer encoding. */
function chunk(data) {
  const b = Buffer.from(data);
  return Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
}

function fixed(socket, status, body, type = 'application/json') {
  const b = Buffer.from(body);
  return write(
    socket,
    Buffer.concat([
      Buffer.from(head(status, { 'content-type': type, 'content-length': b.length, connection: 'close' })),
      b,
    ]),
  );
}

const chunkedHead = (type = 'application/json') =>
  head(200, { 'content-type': type, 'transfer-encoding': 'chunked', connection: 'close' });

/** POST /v1/exec misbehaviours, by mode. */
const EXEC = {
  'tiny-chunks': async (s, n = 12 * MB) => {
    await write(s, chunkedHead());
    const [prefix, suffix] = JSON.stringify(result({ stdout: '@' })).split('@');
    return tinyChunks(s, prefix, 'x', n, suffix);
  },
  'small-chunks': async (s, n = 12 * MB) => {
    await write(s, chunkedHead());
    const [prefix, suffix] = JSON.stringify(result({ stdout: '@' })).split('@');
    return (
      (await write(s, chunk(prefix))) &&
      (await repeat(s, chunk('x'.repeat(40)).toString('latin1'), Math.ceil(n / 40) * 46)) &&
      write(s, Buffer.concat([chunk(suffix), Buffer.from('0\r\n\r\n')]))
    );
  },
  nested: (s, n = 4 * MB) => {
    const half = Math.floor(n / 2);
    return fixed(s, 200, '['.repeat(half) + ']'.repeat(half));
  },
  'many-keys': (s, n = 4 * MB) => {
    const parts = [];
    let size = 2;
    for (let i = 0; size < n; i++) {
      const p = `"k${i}":0`;
      parts.push(p);
      size += p.length + 1;
    }
    return fixed(s, 200, `{${parts.join(',')}}`);
  },
  'huge-output': (s, n = 4 * MB) => fixed(s, 200, JSON.stringify(result({ stdout: 'y'.repeat(n) }))),
  'valid-max': (s, n = 1024 * 1024) => {
    const ctl = '\u0001'.repeat(n);
    return fixed(s, 200, JSON.stringify(result({ stdout: ctl, stderr: ctl, truncated: true })));
  },
  oversized: async (s, n = 1000 * MB) => {
    await write(s, head(200, { 'content-type': 'application/json', 'content-length': n }));
    return repeat(s, '{"stdout":"', n);
  },
  endless: async (s) => {
    await write(s, chunkedHead());
    return repeat(s, chunk('{"stdout":"' + 'z'.repeat(4000)).toString('latin1'));
  },
  'bad-json': (s) => fixed(s, 200, '{"stdout": "x", "exitCode": '),
  null: (s) => fixed(s, 200, 'null'),
  'wrong-types': (s) => fixed(s, 200, JSON.stringify(result({ exitCode: 'abc', stdout: 42 }))),
  'extra-fields': (s) => fixed(s, 200, JSON.stringify(result({ podIP: '10.0.0.1', extra: { a: 1 } }))),
  'bad-http': (s) => write(s, 'HELLO THERE\r\n\r\n'),
  hang: () => new Promise(() => undefined),
  'hang-body': async (s) => {
    const body = JSON.stringify(result());
    await write(s, head(200, { 'content-type': 'application/json', 'content-length': body.length }));
    await write(s, body.slice(0, body.length >> 1));
    return new Promise(() => undefined);
  },
  'big-problem': (s, n = MB) =>
    fixed(
      s,
      400,
      JSON.stringify({
        type: `${PROBLEM_BASE}invalid-request`,
        title: 'x',
        status: 400,
        detail: 'd'.repeat(n),
      }),
      'application/problem+json',
    ),
  'slow-drip': async (s) => {
    const body = JSON.stringify(result({ stdout: 'drip' }));
    await write(s, head(200, { 'content-type': 'application/json', 'content-length': body.length }));
    for (const c of body) {
      if (!(await write(s, c))) return false;
      await new Promise((r) => setTimeout(r, 50));
    }
    return true;
  },
};

const event = (data) => JSON.stringify({ type: 'stdout', data, encoding: 'utf-8' }) + '\n';

/** POST /v1/exec/stream misbehaviours, by mode. */
const STREAM = {
  'stream-endless': async (s) => {
    await write(s, chunkedHead('application/x-ndjson'));
    return repeat(s, chunk(event('e'.repeat(1000))).toString('latin1'));
  },
  'stream-tiny': async (s) => {
    await write(s, chunkedHead('application/x-ndjson'));
    return repeat(s, chunk(event('t')).toString('latin1'));
  },
  'stream-garbage': async (s) => {
    await write(s, chunkedHead('application/x-ndjson'));
    return repeat(
      s,
      chunk('this is not JSON, and each line is a chunk of ordinary size\n').toString('latin1'),
    );
  },
  'stream-long-line': async (s) => {
    await write(s, chunkedHead('application/x-ndjson'));
    await write(s, chunk('{"type":"stdout","data":"'));
    return repeat(s, chunk('l'.repeat(4000)).toString('latin1'));
  },
  'stream-tiny-chunks': async (s) => {
    await write(s, chunkedHead('application/x-ndjson'));
    const line = event('c');
    return repeat(s, oneByteChunks(line));
  },
  'stream-wrong': async (s) => {
    await write(s, chunkedHead('application/x-ndjson'));
    const exit = { type: 'exit', ...pick(result()), exitCode: 'zero' };
    await write(s, chunk(JSON.stringify(exit) + '\n'));
    return write(s, '0\r\n\r\n');
  },
};

/** GET /v1/files/hostile-<mode> misbehaviours. */
const DOWNLOAD = {
  endless: async (s) => {
    await write(s, chunkedHead('application/octet-stream'));
    return repeat(s, chunk('f'.repeat(8000)).toString('latin1'));
  },
  huge: async (s) => {
    await write(s, head(200, { 'content-type': 'application/octet-stream', 'content-length': 1000 * MB }));
    return repeat(s, 'h', 1000 * MB);
  },
  'tiny-chunks': async (s) => {
    await write(s, chunkedHead('application/octet-stream'));
    return tinyChunks(s, '', 'b', 4 * MB, '');
  },
};

/** `hostile:<mode>[:<n>]` -> [mode, n]. */
function parseMode(command) {
  const m = /^hostile:([a-z-]+)(?::(\d+))?$/.exec(command ?? '');
  return m ? [m[1], m[2] === undefined ? undefined : Number(m[2])] : [undefined, undefined];
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size <= MB) chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function onExec(req, res, stream) {
  let command;
  try {
    command = JSON.parse((await readBody(req)).toString()).command;
  } catch {
    command = undefined;
  }
  const [mode, n] = parseMode(command);
  const behaviour = (stream ? STREAM : EXEC)[mode] ?? (stream ? undefined : EXEC[mode]);
  if (behaviour) {
    const socket = res.socket; // the answer is written by hand, bypassing node:http
    await behaviour(socket, n);
    socket.end();
    return;
  }
  if (stream) {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.end(JSON.stringify({ type: 'exit', ...pick(result()) }) + '\n');
  } else {
    sendJson(res, 200, result());
  }
}

function pick(r) {
  const { exitCode, durationMs, truncated, timedOut, shellReset } = r;
  return { exitCode, durationMs, truncated, timedOut, shellReset };
}

async function onUpload(req, res, mode) {
  if (mode === 'no-read') return; // neither read nor answered
  let size = 0;
  if (mode === 'slow-read') {
    req.pause();
    for await (const c of req) {
      size += c.length;
      req.pause();
      await new Promise((r) => setTimeout(r, (c.length / (16 * 1024)) * 1000));
    }
  } else {
    size = (await readBody(req)).length;
  }
  sendJson(res, 201, { path: req.url.slice('/v1/files/'.length), size });
}

async function onDownload(req, res, mode) {
  const behaviour = DOWNLOAD[mode];
  if (!behaviour) {
    sendJson(res, 404, { type: `${PROBLEM_BASE}not-found`, title: 'Not found', status: 404, detail: 'x' });
    return;
  }
  const socket = res.socket;
  await behaviour(socket);
  socket.end();
}

async function handle(req, res) {
  const url = req.url ?? '';
  // The kubelet's HTTP probes: readiness and liveness.
  if (req.method === 'GET' && (url === '/healthz' || url === '/livez'))
    return sendJson(res, 200, { status: 'ok' });
  if (req.method === 'POST' && url === '/v1/exec') return onExec(req, res, false);
  if (req.method === 'POST' && url === '/v1/exec/stream') return onExec(req, res, true);
  const file = /^\/v1\/files\/hostile-([a-z-]+)/.exec(url);
  if (req.method === 'PUT') return onUpload(req, res, file?.[1]);
  if (req.method === 'GET' && url.startsWith('/v1/files/')) return onDownload(req, res, file?.[1]);
  sendJson(res, 404, { type: `${PROBLEM_BASE}not-found`, title: 'Not found', status: 404, detail: url });
}

function serve() {
  const port = Number(process.env.PORT ?? 8090);
  const host = process.env.HOST || '0.0.0.0';
  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      process.stderr.write(`hostile-agent: ${err?.message ?? err}\n`);
      res.socket?.destroy();
    });
  });
  // No timeouts of our own: hanging is part of the act.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 5000;
  server.on('clientError', (_err, socket) => socket.destroy());
  server.listen(port, host, () => {
    const { port: bound } = server.address();
    process.stdout.write(`${JSON.stringify({ listening: `${host}:${bound}`, port: bound })}\n`);
  });
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function probe() {
  const port = Number(process.env.PORT ?? 8090);
  const req = http.get({ host: '127.0.0.1', port, path: '/healthz', timeout: 3000 }, (res) => {
    res.resume();
    process.exit(res.statusCode === 200 ? 0 : 1);
  });
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', () => process.exit(1));
}

if (process.argv[2] === 'probe') probe();
else serve();
