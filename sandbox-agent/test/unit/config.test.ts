/** Configuration from the environment: defaults, token sources, fail-fast validation. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { EGRESS_CA_ENV } from '@sandbox-platform/api';

import { shellEnvironment } from '../../src/agent.js';
import { agentConfig, ConfigError, DEFAULT_CONFIG, loadConfig } from '../../src/config.js';

const TOKEN = 'a'.repeat(64);

describe('loadConfig', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sbx-config-'));
    await writeFile(join(dir, 'token'), `${'f'.repeat(64)}\n`);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('applies the documented defaults', () => {
    const config = loadConfig({ SANDBOX_TOKEN: TOKEN });
    expect(config).toEqual({ ...DEFAULT_CONFIG, token: TOKEN });
    expect(config).toMatchObject({
      port: 8090,
      host: '0.0.0.0',
      workspace: '/workspace',
      outputCapBytes: 1024 * 1024,
      fileMaxBytes: 32 * 1024 * 1024,
      execBodyMaxBytes: 1024 * 1024,
    });
  });

  it('reads every key from its variable', () => {
    const config = loadConfig({
      SANDBOX_TOKEN: TOKEN,
      SANDBOX_AGENT_PORT: '9000',
      SANDBOX_AGENT_HOST: '127.0.0.1',
      SANDBOX_WORKSPACE: '/srv/ws',
      SANDBOX_AGENT_OUTPUT_CAP_BYTES: '100',
      SANDBOX_AGENT_FILE_MAX_BYTES: '200',
      SANDBOX_AGENT_BODY_MAX_BYTES: '300',
      SANDBOX_AGENT_SHUTDOWN_GRACE_SECONDS: '5',
      SANDBOX_AGENT_BASH: '/bin/bash',
      SANDBOX_AGENT_LOG_LEVEL: 'debug',
    });
    expect(config).toMatchObject({
      port: 9000,
      host: '127.0.0.1',
      workspace: '/srv/ws',
      outputCapBytes: 100,
      fileMaxBytes: 200,
      execBodyMaxBytes: 300,
      shutdownGraceMs: 5000,
      bashPath: '/bin/bash',
      logLevel: 'debug',
    });
  });

  it('prefers the token file over the env token and trims its newline', () => {
    const config = loadConfig({ SANDBOX_TOKEN_FILE: join(dir, 'token'), SANDBOX_TOKEN: TOKEN });
    expect(config.token).toBe('f'.repeat(64));
  });

  it('fails when a named token file is missing, naming the file but never a token', () => {
    const missing = join(dir, 'missing');
    expect(() => loadConfig({ SANDBOX_TOKEN_FILE: missing, SANDBOX_TOKEN: TOKEN })).toThrow(
      new RegExp(`cannot read the token file ${missing}: ENOENT`),
    );
  });

  it('fails without any token', () => {
    expect(() => loadConfig({})).toThrow(/no token/);
  });

  it('lists every problem at once', () => {
    let error: unknown;
    try {
      loadConfig({
        SANDBOX_TOKEN: 'short',
        SANDBOX_AGENT_PORT: '70000',
        SANDBOX_WORKSPACE: 'relative',
        SANDBOX_AGENT_LOG_LEVEL: 'loud',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    for (const part of [
      'port must be',
      'token must be at least 16',
      'workspace must be an absolute',
      'logLevel must be',
    ]) {
      expect(message).toContain(part);
    }
    expect(message).not.toContain('short');
  });

  it('reads the session env from SANDBOX_ENV_* and validates it and the new bounds', () => {
    expect(
      loadConfig({ SANDBOX_TOKEN: TOKEN, SANDBOX_ENV_NODE_OPTIONS: '--x', SANDBOX_ENV_A: '' }).sessionEnv,
    ).toEqual({
      NODE_OPTIONS: '--x',
      A: '',
    });
    expect(() => loadConfig({ SANDBOX_TOKEN: TOKEN, SANDBOX_ENV_: 'x' })).toThrow(
      /session env name "" is not a valid variable name/,
    );
    expect(() => agentConfig({ token: TOKEN, maxQueuedCommands: -1, maxConnections: 0 })).toThrow(
      /maxQueuedCommands must be an integer in 0\.\.100000; maxConnections must be an integer in 1\.\.100000/,
    );
  });

  it('reads the egress CA file, which must be an absolute path', () => {
    expect(
      loadConfig({ SANDBOX_TOKEN: TOKEN, [EGRESS_CA_ENV]: '/var/run/sandbox-egress/ca.crt' }).egressCaFile,
    ).toBe('/var/run/sandbox-egress/ca.crt');
    expect(loadConfig({ SANDBOX_TOKEN: TOKEN, [EGRESS_CA_ENV]: '' }).egressCaFile).toBeUndefined();
    expect(() => loadConfig({ SANDBOX_TOKEN: TOKEN, [EGRESS_CA_ENV]: 'ca.crt' })).toThrow(
      new ConfigError('invalid agent configuration: egressCaFile must be an absolute path, got "ca.crt"'),
    );
  });

  it('refuses non-numeric sizes', () => {
    expect(() => loadConfig({ SANDBOX_TOKEN: TOKEN, SANDBOX_AGENT_OUTPUT_CAP_BYTES: '1MiB' })).toThrow(
      /SANDBOX_AGENT_OUTPUT_CAP_BYTES must be a non-negative integer/,
    );
    expect(() => agentConfig({ token: TOKEN, outputCapBytes: 0 })).toThrow(
      /outputCapBytes must be a positive integer/,
    );
  });
});

describe('shellEnvironment', () => {
  it('removes the token and the agent settings, keeps the rest, and starts in the workspace', () => {
    const env = shellEnvironment(
      {
        SANDBOX_TOKEN: TOKEN,
        SANDBOX_TOKEN_FILE: '/t',
        SANDBOX_AGENT_PORT: '1',
        [EGRESS_CA_ENV]: '/var/run/sandbox-egress/ca.crt',
        HOME: '/workspace',
        PATH: '/bin',
        OLDPWD: '/x',
        SANDBOX_ENV_LD_PRELOAD: '/evil.so',
      },
      '/ws',
    );
    // The session env carriers reach bash only through PersistentShell's sessionEnv.
    expect(env).toEqual({ HOME: '/workspace', PATH: '/bin', PWD: '/ws' });
  });
});
