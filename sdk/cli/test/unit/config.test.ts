import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from '@jest/globals';

import { configPath, redacted, resolveSettings, setConfigValue } from '../../src/config.js';

const dirs: string[] = [];
const dir = (): string => {
  dirs.push(mkdtempSync(join(tmpdir(), 'sbx-config-')));
  return dirs.at(-1)!;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('settings', () => {
  it('takes flags over the environment over the config file', () => {
    const path = join(dir(), 'config.yaml');
    writeFileSync(path, 'url: http://file\nkey: file-key\nnamespace: file-ns\noutput: yaml\n');
    const env = { SANDBOX_CONFIG: path, SANDBOX_URL: 'http://env', SANDBOX_KEY: 'env-key' };
    expect(resolveSettings({ url: 'http://flag' }, env)).toMatchObject({
      url: 'http://flag',
      key: 'env-key',
      namespace: 'file-ns',
      output: 'yaml',
    });
  });

  it('finds the file under XDG_CONFIG_HOME, else ~/.config', () => {
    expect(configPath({ XDG_CONFIG_HOME: '/x' })).toBe('/x/sbx/config.yaml');
    expect(configPath({ HOME: '/home/u' })).toBe('/home/u/.config/sbx/config.yaml');
    expect(configPath({ HOME: '/home/u' }, '/flag.yaml')).toBe('/flag.yaml');
  });

  it('refuses unknown keys, non-strings and bad output formats with the file named', () => {
    const path = join(dir(), 'config.yaml');
    writeFileSync(path, 'server: http://x\n');
    expect(() => resolveSettings({}, { SANDBOX_CONFIG: path })).toThrow(
      `config file ${path}: unknown key "server"`,
    );
    writeFileSync(path, 'url: [1]\n');
    expect(() => resolveSettings({}, { SANDBOX_CONFIG: path })).toThrow('"url" must be a string');
    expect(() => resolveSettings({ output: 'xml' }, { SANDBOX_CONFIG: path + '.none' })).toThrow(
      'unknown output format "xml"',
    );
  });

  it('writes the file with mode 0600 (it may hold the key) and never shows the key', () => {
    const path = join(dir(), 'sub', 'config.yaml');
    setConfigValue(path, 'key', 'secret-key-value');
    setConfigValue(path, 'url', 'http://gw');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toBe('key: secret-key-value\nurl: http://gw\n');
    const shown = JSON.stringify(redacted(resolveSettings({}, { SANDBOX_CONFIG: path })));
    expect(shown).not.toContain('secret');
    expect(() => setConfigValue(path, 'token', 'x')).toThrow('unknown config key "token"');
  });
});
