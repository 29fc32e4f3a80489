/**
 * The official JS e2b SDK (npm e2b, pinned in test-e2e) against the gateway's E2B API, with real
 * sandbox agents behind it (helpers/e2b-app.ts plays the operator): create, commands, files,
 * terminal, timeout, pause/connect, list, kill, tenancy and bad input, as the SDK sees them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
// The SDK's ESM build: jest cannot load its CommonJS main (it require()s the ESM-only chalk).
import { CommandExitError, Sandbox } from 'e2b/dist/index.mjs';

import { KEYS } from '../../helpers/app.js';
import { startE2bApp, type E2bApp } from './helpers/e2b-app.js';

describe('e2b JS SDK against the gateway', () => {
  let e: E2bApp;
  beforeAll(async () => {
    e = await startE2bApp();
  });
  afterAll(async () => {
    await e.close();
  });

  it('creates a sandbox and runs a command: stdout and exit code', async () => {
    const sbx = await Sandbox.create(e.opts(KEYS.a));
    expect(sbx.sandboxId).toMatch(/^sbx-[a-z0-9]+\.team-a$/);
    const r = await sbx.commands.run('echo hi; echo err >&2');
    expect(r).toMatchObject({ exitCode: 0, stdout: 'hi\n', stderr: 'err\n' });
    const failed = await sbx.commands.run('echo out; exit 3').catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(CommandExitError);
    expect(failed).toMatchObject({ exitCode: 3, stdout: 'out\n' });
    await sbx.kill();
  });
});
