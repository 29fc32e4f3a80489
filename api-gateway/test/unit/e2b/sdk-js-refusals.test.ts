/**
 * What the gateway refuses, as the official JS e2b SDK reports it: another key's sandboxes
 * (SECURITY), access tokens that are missing or belong to another sandbox (SECURITY), and bad
 * input (an unknown template, paths outside the workspace, payloads over the limits) with the
 * SDK's documented errors, never a hang or a 5xx.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AuthenticationError,
  InvalidArgumentError,
  Sandbox,
  SandboxError,
  SandboxNotFoundError,
} from 'e2b/dist/index.mjs';

import { KEYS } from '../../helpers/app.js';
import { startE2bApp, type E2bApp } from './helpers/e2b-app.js';

/** A raw Connect call to envd (what the SDK sends, with the headers the test chooses). */
async function rawList(
  e: E2bApp,
  headers: Record<string, string>,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${e.url}/e2b/envd/process.Process/List`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: '{}',
  });
  return { status: res.status, body: await res.json() };
}

describe('e2b JS SDK: refusals', () => {
  let e: E2bApp;
  let one: Sandbox;
  let two: Sandbox;
  beforeAll(async () => {
    e = await startE2bApp();
    [one, two] = await Promise.all([Sandbox.create(e.opts(KEYS.a)), Sandbox.create(e.opts(KEYS.a))]);
  }, 60_000);
  afterAll(async () => {
    await e.close();
  });

  it('SECURITY: another key can neither see, connect to, time, pause nor kill the sandbox', async () => {
    const b = e.opts(KEYS.b);
    await expect(Sandbox.getInfo(one.sandboxId, b)).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(Sandbox.connect(one.sandboxId, b)).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(Sandbox.setTimeout(one.sandboxId, 60_000, b)).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(Sandbox.pause(one.sandboxId, b)).rejects.toBeInstanceOf(SandboxNotFoundError);
    expect(await Sandbox.kill(one.sandboxId, b)).toBe(false);
    const listed = await Sandbox.list(b).nextItems();
    expect(listed.map((s) => s.sandboxId)).not.toContain(one.sandboxId);
    const mine = await Sandbox.list(e.opts(KEYS.a)).nextItems();
    expect(mine.map((s) => s.sandboxId)).toEqual(expect.arrayContaining([one.sandboxId, two.sandboxId]));
    expect((await one.commands.run('echo alive')).stdout).toBe('alive\n');
  });

  it("SECURITY: one sandbox's access token is refused for another sandbox, and no token is refused", async () => {
    const tokenOfOne = e.tokens.token({
      namespace: 'team-a',
      name: one.sandboxId.split('.')[0]!,
      uid: e.store.get('team-a', one.sandboxId.split('.')[0]!)!.metadata.uid!,
    });
    const crossed = await rawList(e, { 'x-access-token': tokenOfOne, 'e2b-sandbox-id': two.sandboxId });
    expect(crossed).toEqual({
      status: 401,
      body: {
        code: 'unauthenticated',
        message: `the access token is not the one of sandbox ${two.sandboxId}`,
      },
    });
    const none = await rawList(e, { 'e2b-sandbox-id': two.sandboxId });
    expect(none.status).toBe(401);
    const ok = await rawList(e, { 'x-access-token': tokenOfOne, 'e2b-sandbox-id': one.sandboxId });
    expect(ok.status).toBe(200);
    // The SDK holding the wrong token reports AuthenticationError.
    const wrong = await Sandbox.connect(two.sandboxId, e.opts(KEYS.a));
    (wrong as unknown as { envdAccessToken: string }).envdAccessToken = tokenOfOne;
    await expect(wrong.commands.run('echo no')).rejects.toBeInstanceOf(AuthenticationError);
    await expect(wrong.commands.list()).rejects.toBeInstanceOf(AuthenticationError);
    // envd's file route checks the same token.
    const file = await fetch(`${e.url}/e2b/envd/files?path=x`, {
      headers: { 'x-access-token': tokenOfOne, 'e2b-sandbox-id': two.sandboxId },
    });
    expect(file.status).toBe(401);
  });

  it('refuses calls without a valid API key (AuthenticationError)', async () => {
    await expect(Sandbox.create({ ...e.opts('not-a-key-0123456789abcdef') })).rejects.toBeInstanceOf(
      AuthenticationError,
    );
    // An older SDK's key shape: e2b_ and the hex of the key is the same key.
    const hexKey = `e2b_${Buffer.from(KEYS.a).toString('hex')}`;
    expect((await Sandbox.list(e.opts(hexKey)).nextItems()).length).toBeGreaterThan(0);
  });

  it('bad input: unknown template (404 SandboxError), nothing left behind', async () => {
    const before = e.store.list('team-a').length;
    const err = await Sandbox.create('no-such-template', e.opts(KEYS.a)).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(SandboxError);
    expect(err).toMatchObject({
      statusCode: 404,
      message: expect.stringContaining('template "no-such-template" not found'),
    });
    expect(e.store.list('team-a').length).toBe(before);
    const unsupported = await Sandbox.create({ ...e.opts(KEYS.a), allowInternetAccess: false }).catch(
      (x: unknown) => x,
    );
    expect(unsupported).toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('allow_internet_access'),
    });
  });

  it('bad input: paths outside the workspace are InvalidArgumentError', async () => {
    await expect(one.files.read('/etc/passwd')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(one.files.write('/etc/evil', 'x')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(one.files.list('../..')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(one.files.remove(e.workspace)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(one.commands.run('true', { user: 'root' })).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('bad input: payloads over the limits are InvalidArgumentError', async () => {
    // TEST_ENV: GATEWAY_MAX_FILE_BYTES 131072, GATEWAY_MAX_BODY_BYTES 65536.
    const big = new Uint8Array(200 * 1024);
    await expect(one.files.write('big.bin', big.buffer)).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await one.files.exists('big.bin')).toBe(false);
    await expect(one.commands.run(`echo ${'x'.repeat(70_000)}`)).rejects.toBeInstanceOf(InvalidArgumentError);
    const h = await one.commands.run('cat', { background: true, stdin: true });
    await expect(h.sendStdin('y'.repeat(70_000))).rejects.toBeInstanceOf(InvalidArgumentError);
    await h.kill();
  });
});
