/** The telemetry keys of the configuration: the metrics port and the OTEL_* tracing settings. */
import { describe, expect, it } from '@jest/globals';

import { ConfigError, loadConfig } from '../../../src/config.js';

const REQUIRED = { SANDBOX_MASTER_KEY_FILE: '/etc/sandbox/master-key', POD_NAMESPACE: 'sandbox-system' };

describe('telemetry configuration', () => {
  it('defaults: metrics on 9090 apart from the probes on 8080; tracing off', () => {
    const c = loadConfig(REQUIRED, 'host-1');
    expect(c.http).toEqual({ port: 8080, metricsPort: 9090, host: '0.0.0.0' });
    expect(c.tracing).toBeUndefined();
  });

  it('refuses the metrics port on the probe port (0, any free port, excepted)', () => {
    expect(() => loadConfig({ ...REQUIRED, HTTP_PORT: '9000', METRICS_PORT: '9000' })).toThrow(
      /METRICS_PORT must differ from HTTP_PORT/,
    );
    expect(loadConfig({ ...REQUIRED, HTTP_PORT: '0', METRICS_PORT: '0' }).http).toMatchObject({
      port: 0,
      metricsPort: 0,
    });
  });

  it('turns tracing on with an OTLP endpoint, with the standard defaults', () => {
    const c = loadConfig({ ...REQUIRED, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' });
    expect(c.tracing).toEqual({
      endpoint: 'http://collector:4318',
      protocol: 'http/protobuf',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 1,
      serviceName: 'sandbox-operator',
    });
  });

  it('reads every OTEL_* key and validates it', () => {
    const c = loadConfig({
      ...REQUIRED,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_SERVICE_NAME: 'ops',
    });
    expect(c.tracing).toMatchObject({
      protocol: 'http/json',
      sampler: 'traceidratio',
      samplerRatio: 0.25,
      serviceName: 'ops',
    });
    const bad = {
      ...REQUIRED,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4317',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_TRACES_SAMPLER_ARG: '2',
    };
    expect(() => loadConfig(bad)).toThrow(ConfigError);
    expect(() => loadConfig(bad)).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT.*OTEL_EXPORTER_OTLP_PROTOCOL.*OTEL_TRACES_SAMPLER_ARG/,
    );
  });
});
