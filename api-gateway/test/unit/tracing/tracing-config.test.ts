/** The OTEL_* keys of the gateway: off by default, validated like every other key, sent to the agent checked. */
import { describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../../src/config.js';
import { requestHead } from '../../../src/exec/agent/agent-wire.js';
import { TEST_ENV } from '../../helpers/app.js';

describe('tracing configuration', () => {
  it('is off without an endpoint', () => {
    expect(loadConfig(TEST_ENV).tracing).toBeUndefined();
  });

  it('reads the standard keys with the operator defaults', () => {
    expect(loadConfig({ ...TEST_ENV, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual(
      {
        endpoint: 'http://collector:4318',
        protocol: 'http/protobuf',
        sampler: 'parentbased_traceidratio',
        samplerRatio: 1,
        serviceName: 'sandbox-api-gateway',
      },
    );
    expect(
      loadConfig({
        ...TEST_ENV,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_SERVICE_NAME: 'gw',
      }).tracing,
    ).toMatchObject({
      protocol: 'http/json',
      sampler: 'traceidratio',
      samplerRatio: 0.25,
      serviceName: 'gw',
    });
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_TRACES_SAMPLER', 'jaeger_remote'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
    ['OTEL_SERVICE_NAME', ''],
  ])('refuses %s=%j', (key, value) => {
    expect(() =>
      loadConfig({ ...TEST_ENV, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', [key]: value }),
    ).toThrow(new RegExp(`invalid gateway configuration: .*${key}`));
  });
});

describe('traceparent on the agent wire', () => {
  const base = { method: 'POST' as const, path: '/v1/exec', token: 't', body: Buffer.from('{}') };
  const valid = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

  it('is sent as one header line when set, and not at all otherwise', () => {
    expect(requestHead('10.0.0.1:8090', { ...base, traceparent: valid })).toContain(
      `\r\ntraceparent: ${valid}\r\n`,
    );
    expect(requestHead('10.0.0.1:8090', base)).not.toContain('traceparent');
  });

  it.each([`${valid}\r\nx-injected: 1`, valid.toUpperCase(), '00-abc-def-01', `${valid} `])(
    'refuses anything but a W3C value: %j',
    (traceparent) => {
      expect(() => requestHead('10.0.0.1:8090', { ...base, traceparent })).toThrow(
        'invalid agent request traceparent',
      );
    },
  );
});
