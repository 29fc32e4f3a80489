/** The console and preview keys of the gateway's configuration (console/config.ts, preview/config.ts). */
import { describe, expect, it } from '@jest/globals';

import { CONFIG_KEYS, loadConfig } from '../../../src/config.js';
import { TEST_ENV } from '../../helpers/app.js';

describe('console and preview configuration', () => {
  it('is off by default', () => {
    const c = loadConfig(TEST_ENV);
    expect(c.console).toBeUndefined();
    expect(c.preview).toBeUndefined();
    for (const key of [
      'GATEWAY_CONSOLE_DIR',
      'GATEWAY_PREVIEW_DOMAIN',
      'GATEWAY_PREVIEW_SCHEME',
      'GATEWAY_PREVIEW_PORT',
      'GATEWAY_PREVIEW_MAX_TTL_SECONDS',
    ]) {
      expect(CONFIG_KEYS).toContain(key);
    }
  });

  it('reads a preview domain, scheme, port and lifetime (https and 3600 s by default)', () => {
    expect(loadConfig({ ...TEST_ENV, GATEWAY_PREVIEW_DOMAIN: 'preview.example.com' }).preview).toEqual({
      domain: 'preview.example.com',
      scheme: 'https',
      port: 0,
      maxTtlSeconds: 3600,
    });
    const local = loadConfig({
      ...TEST_ENV,
      GATEWAY_PREVIEW_DOMAIN: 'preview.sandbox.test',
      GATEWAY_PREVIEW_SCHEME: 'http',
      GATEWAY_PREVIEW_PORT: '8080',
      GATEWAY_CONSOLE_DIR: '/opt/api-gateway/console',
    });
    expect(local.preview).toMatchObject({ scheme: 'http', port: 8080 });
    expect(local.console).toEqual({ dir: '/opt/api-gateway/console' });
  });

  it('stops at start on a domain that is not a lower-case DNS name, or a bad scheme', () => {
    for (const domain of [
      'Preview.Example.com',
      '.example.com',
      'example.com.',
      'a_b.test',
      '*.example.com',
      'https://x',
    ]) {
      expect(() => loadConfig({ ...TEST_ENV, GATEWAY_PREVIEW_DOMAIN: domain })).toThrow(
        /GATEWAY_PREVIEW_DOMAIN/,
      );
    }
    expect(() => loadConfig({ ...TEST_ENV, GATEWAY_PREVIEW_SCHEME: 'ftp' })).toThrow(
      /GATEWAY_PREVIEW_SCHEME/,
    );
  });
});
