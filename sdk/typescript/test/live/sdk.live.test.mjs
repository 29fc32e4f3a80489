// The packed @sandbox-platform/client against a live gateway: run by mk/sdk.mk from an empty
// project where only the packed tarball is installed (node --test, no other dependency).
// Needs E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY and E2E_NAMESPACE (make platform-env, or
// sdk/scripts/with-local-gateway.sh); E2E_OTHER_NAMESPACE is a namespace the key may not use.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';

import {
  AuthenticationError,
  ConnectionError,
  GatewayError,
  NotFoundError,
  PermissionDeniedError,
  SandboxClient,
  SandboxError,
  VERSION,
  decodeOutput,
  eventBytes,
} from '@sandbox-platform/client';

const url = required('E2E_GATEWAY_URL');
const apiKey = required('E2E_GATEWAY_API_KEY');
const namespace = required('E2E_NAMESPACE');
const name = `sdk-ts-${randomBytes(3).toString('hex')}`;
const client = new SandboxClient({ baseUrl: url, apiKey, namespace });

function required(key) {
  const value = process.env[key];
  if (!value) throw new Error(`${key} is not set (see mk/sdk.mk)`);
  return value;
}

/** A loopback port nothing listens on (the "gateway down" case). */
async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe(`@sandbox-platform/client ${VERSION} against ${url}`, () => {
  before(async () => {
    const { session, created } = await client.createSession({ name });
    assert.equal(created, true);
    assert.equal(session.name, name);
    const again = await client.createSession({ name });
    assert.equal(again.created, false);
    assert.equal(again.session.uid, session.uid);
    await client.waitUntilReady(name, { timeoutMs: 120_000 });
  });

  after(async () => {
    await client.deleteSession(name).catch((err) => {
      if (!(err instanceof NotFoundError)) throw err;
    });
  });

  it('gets and lists the session', async () => {
    const s = await client.getSession(name);
    assert.equal(s.ready, true);
    assert.equal(s.namespace, namespace);
    assert.ok((await client.listSessions()).some((x) => x.name === name));
  });

  it('execs: output and a non-zero exit code as a normal result', async () => {
    const r = await client.exec(name, { command: 'echo out; echo err >&2; exit 3', timeoutSeconds: 30 });
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(r.exitCode, 3);
  });

  it('streams exec output as it comes, ending with the exit event', async () => {
    const events = [];
    for await (const ev of client.execStream(name, {
      command: 'for i in 1 2 3; do echo $i; sleep 0.2; done; exit 4',
    })) {
      events.push(ev);
    }
    const out = events.filter((e) => e.type === 'stdout').map((e) => new TextDecoder().decode(eventBytes(e)));
    assert.equal(out.join(''), '1\n2\n3\n');
    assert.deepEqual(events.at(-1)?.type, 'exit');
    assert.equal(events.at(-1)?.exitCode, 4);
  });

  it('moves files byte for byte (every byte value) and sees them from exec', async () => {
    const data = new Uint8Array(70_000).map((_, i) => (i * 7 + 3) % 256);
    const written = await client.writeFile(name, 'sdk-ts/all-bytes.bin', data);
    assert.deepEqual(written, { path: 'sdk-ts/all-bytes.bin', size: data.length });
    assert.deepEqual(await client.readFile(name, 'sdk-ts/all-bytes.bin'), data);
    const r = await client.exec(name, { command: 'head -c 4 sdk-ts/all-bytes.bin' });
    assert.deepEqual([...decodeOutput(r.stdout, r.stdoutEncoding)], [3, 10, 17, 24]);
  });

  it('types the errors: unknown session, forbidden namespace, path outside the workspace', async () => {
    const nf = await client.getSession('no-such-session-sdk').catch((e) => e);
    assert.ok(nf instanceof NotFoundError, String(nf));
    assert.equal(nf.code, 'session-not-found');
    assert.equal(nf.status, 404);
    const ex = await client.exec('no-such-session-sdk', { command: 'true' }).catch((e) => e);
    assert.ok(ex instanceof NotFoundError, String(ex));
    if (process.env.E2E_OTHER_NAMESPACE) {
      const fb = await client.listSessions(process.env.E2E_OTHER_NAMESPACE).catch((e) => e);
      assert.ok(fb instanceof PermissionDeniedError, String(fb));
      assert.equal(fb.code, 'forbidden');
    }
    // An absolute path reaches the gateway, which refuses it; a ".." segment is refused before sending.
    for (const p of ['/etc/passwd', '../etc/passwd']) {
      const err = await client.readFile(name, p).catch((e) => e);
      assert.ok(err instanceof PermissionDeniedError, String(err));
      assert.equal(err.code, 'path-forbidden');
    }
  });

  it('types a wrong key as AuthenticationError', async () => {
    const wrong = new SandboxClient({ baseUrl: url, apiKey: 'wrong-key-0123456789abcdef', namespace });
    const err = await wrong.listSessions().catch((e) => e);
    assert.ok(err instanceof AuthenticationError, String(err));
    assert.equal(err.code, 'unauthorized');
  });

  it('types a gateway that is down as ConnectionError (after its retries)', async () => {
    const down = new SandboxClient({
      baseUrl: `http://127.0.0.1:${await closedPort()}`,
      apiKey,
      retry: { initialDelayMs: 10 },
    });
    const err = await down.getSession(name).catch((e) => e);
    assert.ok(err instanceof ConnectionError, String(err));
    assert.ok(err instanceof SandboxError);
    assert.equal(err.code, 'connection-failed');
    assert.match(err.message, /ECONNREFUSED/);
  });

  it('deletes the session', async () => {
    await client.deleteSession(name);
    // Deletion is asynchronous: the session is still there (being deleted) until the operator's
    // finalizer has removed its Pod and Secret; then the gateway answers 404 or 410. The
    // clean-clone CI run of 9e16e62 read it 23 ms after the delete and got it back.
    const deadline = Date.now() + 60_000;
    let err;
    while (err === undefined && Date.now() < deadline) {
      err = await client.getSession(name).then(
        () => undefined,
        (e) => e,
      );
      if (err === undefined) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.ok(err instanceof GatewayError && [404, 410].includes(err.status), String(err));
  });
});
