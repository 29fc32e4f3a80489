/** The warm pool settings of the operator's configuration (POOL_AGENT_PORT, POOL_BIND_TIMEOUT_MS). */
import { describe, expect, it } from '@jest/globals';

import { ConfigError, loadConfig } from '../../../src/config.js';

const REQUIRED = { SANDBOX_MASTER_KEY_FILE: '/etc/sandbox/master-key', POD_NAMESPACE: 'sandbox-system' };

describe('pool configuration', () => {
  it('defaults to the agent port and a 2 s bind deadline', () => {
    expect(loadConfig(REQUIRED, 'h').pool).toEqual({ agentPort: 8090, bindTimeoutMs: 2000 });
  });

  it('takes both from the environment', () => {
    const c = loadConfig({ ...REQUIRED, POOL_AGENT_PORT: '18090', POOL_BIND_TIMEOUT_MS: '500' }, 'h');
    expect(c.pool).toEqual({ agentPort: 18090, bindTimeoutMs: 500 });
  });

  it('refuses out-of-range values, naming them', () => {
    expect(() => loadConfig({ ...REQUIRED, POOL_AGENT_PORT: '0' }, 'h')).toThrow(ConfigError);
    expect(() => loadConfig({ ...REQUIRED, POOL_BIND_TIMEOUT_MS: '10' }, 'h')).toThrow(
      /POOL_BIND_TIMEOUT_MS/,
    );
  });
});
