/**
 * Every limit of issue 12 is a config key (src/config.ts) and a chart value: the gateway template
 * sets each key, and sets no key the config does not know (a typo would be ignored silently).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from '@jest/globals';

import { CONFIG_KEYS } from '../../src/config.js';

const here = dirname(fileURLToPath(import.meta.url));
const template = readFileSync(
  join(here, '../../../charts/sandbox-platform/templates/gateway-deployment.yaml'),
  'utf8',
);

/** The limits (timeouts, sizes, rates, quotas, shedding) that must be chart values. */
const LIMITS = [
  'GATEWAY_HEADERS_TIMEOUT_SECONDS',
  'GATEWAY_REQUEST_TIMEOUT_SECONDS',
  'GATEWAY_KEEP_ALIVE_TIMEOUT_SECONDS',
  'GATEWAY_KUBE_API_TIMEOUT_SECONDS',
  'GATEWAY_WRITE_TIMEOUT_SECONDS',
  'GATEWAY_MAX_BODY_BYTES',
  'GATEWAY_MAX_FILE_BYTES',
  'GATEWAY_MAX_EXEC_STDIN_STREAM_BYTES',
  'GATEWAY_MCP_MAX_BODY_BYTES',
  'GATEWAY_MAX_OUTPUT_BYTES',
  'GATEWAY_MAX_BUFFERED_ANSWER_BYTES',
  'GATEWAY_KEY_MAX_CONCURRENT_REQUESTS',
  'GATEWAY_KEY_MAX_REQUESTS_PER_SECOND',
  'GATEWAY_KEY_ANSWER_CPU_MS_PER_SECOND',
  'GATEWAY_SHED_EVENT_LOOP_DELAY_MS',
  'GATEWAY_SHED_HEAP_USED_BYTES',
  'GATEWAY_SHED_RSS_BYTES',
  'GATEWAY_MAX_SESSIONS_PER_KEY',
  'GATEWAY_MAX_SESSIONS_PER_NAMESPACE',
  'GATEWAY_MAX_SESSION_ENV_BYTES',
];

describe('gateway config and chart', () => {
  it.each(LIMITS)('%s is a config key and set by the chart', (key) => {
    expect(CONFIG_KEYS).toContain(key);
    expect(template).toContain(`name: ${key},`);
  });

  it('the chart sets only keys the config knows', () => {
    const set = [...template.matchAll(/name: (GATEWAY_[A-Z_]+|SANDBOX_[A-Z_]+|OTEL_[A-Z_]+),/g)].map(
      (m) => m[1]!,
    );
    expect(set.length).toBeGreaterThan(LIMITS.length);
    for (const key of set) expect(CONFIG_KEYS).toContain(key);
  });
});
