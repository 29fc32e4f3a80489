import { describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../src/config.js';

const required = {
  GATEWAY_API_KEYS_FILE: '/keys.json',
  SANDBOX_MASTER_KEY_FILE: '/master',
  GATEWAY_NAMESPACES: 'a, b ,a',
};

describe('loadConfig', () => {
  it('applies documented defaults and parses lists', () => {
    const c = loadConfig(required);
    expect(c).toMatchObject({
      port: 8080,
      metricsPort: 9090,
      host: '0.0.0.0',
      namespaces: ['a', 'b'],
      agentPort: 8090,
      maxBodyBytes: 1048576,
      activityThrottleMs: 15000,
      shutdownDelayMs: 5000,
      shutdownGraceMs: 330000,
      mcpMaxBodyBytes: 1048576,
      server: {
        headersTimeoutMs: 10000,
        requestTimeoutMs: 60000,
        keepAliveTimeoutMs: 72000,
        writeTimeoutMs: 30000,
        maxBufferedAnswerBytes: 96 << 20,
      },
      tenants: {
        maxConcurrentRequests: 32,
        maxRequestsPerSecond: 100,
        maxSessionsPerKey: 50,
        maxSessionsPerNamespace: 100,
        answerCpuMsPerSecond: 250,
      },
      shedding: { maxEventLoopDelayMs: 1000, maxHeapUsedBytes: 0, maxRssBytes: 0 },
      policy: {
        maxEnvBytes: 32768,
        defaultIdleTimeoutSeconds: 1800,
        allowedExecTransports: ['Agent', 'KubernetesExec'],
      },
      exec: {
        maxTimeoutSeconds: 300,
        defaultTimeoutSeconds: 60,
        deadlineMarginMs: 10000,
        maxOutputBytes: 1048576,
        connectRetries: 2,
      },
    });
  });

  it('refuses loopback pod IPs unless GATEWAY_ALLOW_LOOPBACK_POD_IPS=true', () => {
    expect(loadConfig(required).addressPolicy).toEqual({ allowLoopback: false });
    expect(loadConfig({ ...required, GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true' }).addressPolicy).toEqual({
      allowLoopback: true,
    });
    expect(() => loadConfig({ ...required, GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'yes' })).toThrow(
      /GATEWAY_ALLOW_LOOPBACK_POD_IPS/,
    );
  });

  it('coerces numbers from strings', () => {
    expect(
      loadConfig({
        ...required,
        GATEWAY_PORT: '9000',
        GATEWAY_METRICS_PORT: '9100',
        GATEWAY_AGENT_PORT: '18090',
      }),
    ).toMatchObject({
      port: 9000,
      metricsPort: 9100,
      agentPort: 18090,
    });
    // 0 picks free ports for both (tests): never "the same port".
    expect(loadConfig({ ...required, GATEWAY_PORT: '0', GATEWAY_METRICS_PORT: '0' }).metricsPort).toBe(0);
  });

  it.each([
    [{}, /GATEWAY_API_KEYS_FILE/],
    [{ ...required, GATEWAY_PORT: 'http' }, /GATEWAY_PORT must be integer/],
    [{ ...required, GATEWAY_METRICS_PORT: '70000' }, /GATEWAY_METRICS_PORT must be <= 65535/],
    [
      { ...required, GATEWAY_METRICS_PORT: '8080' },
      /GATEWAY_METRICS_PORT \(8080\) must differ from GATEWAY_PORT/,
    ],
    [{ ...required, GATEWAY_PORT: '9090' }, /GATEWAY_METRICS_PORT \(9090\) must differ from GATEWAY_PORT/],
    [{ ...required, GATEWAY_NAMESPACES: 'Bad_NS' }, /not DNS labels: Bad_NS/],
    [{ ...required, GATEWAY_ALLOWED_EXEC_TRANSPORTS: 'Agent,Ssh' }, /GATEWAY_ALLOWED_EXEC_TRANSPORTS/],
    [
      { ...required, GATEWAY_MAX_EXEC_TIMEOUT_SECONDS: '301' },
      /GATEWAY_MAX_EXEC_TIMEOUT_SECONDS must be <= 300/,
    ],
    [
      { ...required, GATEWAY_DEFAULT_IDLE_TIMEOUT_SECONDS: '9000', GATEWAY_MAX_IDLE_TIMEOUT_SECONDS: '3600' },
      /exceeds its maximum/,
    ],
    [{ ...required, GATEWAY_LOG_LEVEL: 'verbose' }, /GATEWAY_LOG_LEVEL/],
    [
      { ...required, GATEWAY_HEADERS_TIMEOUT_SECONDS: '30', GATEWAY_REQUEST_TIMEOUT_SECONDS: '20' },
      /GATEWAY_HEADERS_TIMEOUT_SECONDS \(30\) exceeds/,
    ],
    [
      { ...required, GATEWAY_MAX_SESSION_ENV_BYTES: '40000' },
      /GATEWAY_MAX_SESSION_ENV_BYTES must be <= 32768/,
    ],
  ])('fails fast on %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});
