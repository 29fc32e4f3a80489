/**
 * The tracing configuration of the gateway and the operator, read from the standard OpenTelemetry
 * variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_TRACES_SAMPLER,
 * OTEL_TRACES_SAMPLER_ARG, OTEL_SERVICE_NAME). One home for both: the JSON Schema of the variables
 * (each service spreads it into its own environment schema) and the settings they make. Free of
 * the OpenTelemetry SDK: reading the configuration never loads it.
 */

/** The OTEL_TRACES_SAMPLER values supported (those of the OpenTelemetry specification, but jaeger/xray). */
export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** The OTEL_EXPORTER_OTLP_PROTOCOL values supported (grpc is not). */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/** Tracing settings; tracing is on exactly when one is given. */
export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: base URL; spans are posted to `<endpoint>/v1/traces`. */
  readonly endpoint: string;
  /** OTEL_EXPORTER_OTLP_PROTOCOL. */
  readonly protocol: (typeof OTLP_PROTOCOLS)[number];
  /** OTEL_TRACES_SAMPLER. */
  readonly sampler: (typeof SAMPLERS)[number];
  /** OTEL_TRACES_SAMPLER_ARG: ratio of the *traceidratio samplers. */
  readonly samplerRatio: number;
  /** OTEL_SERVICE_NAME. */
  readonly serviceName: string;
}

/**
 * JSON Schema properties of the OTEL_* variables (strings coerced by Ajv), with their defaults:
 * `serviceName` is the service's own default for OTEL_SERVICE_NAME, `traced` says what is traced.
 */
export function otelEnvSchema(serviceName: string, traced: string) {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: {
      type: 'string',
      default: '',
      pattern: '^(https?://.+)?$',
      description:
        'OTLP/HTTP endpoint of a collector (spans go to <endpoint>/v1/traces); empty: tracing off, ' +
        'and the OpenTelemetry SDK is not even loaded.',
    },
    OTEL_EXPORTER_OTLP_PROTOCOL: {
      type: 'string',
      enum: [...OTLP_PROTOCOLS],
      default: 'http/protobuf',
      description: 'OTLP encoding (grpc is not supported).',
    },
    OTEL_TRACES_SAMPLER: {
      type: 'string',
      enum: [...SAMPLERS],
      default: 'parentbased_traceidratio',
      description: `Sampler of ${traced} (the standard values; parent-based follows a caller's traceparent).`,
    },
    OTEL_TRACES_SAMPLER_ARG: {
      type: 'number',
      minimum: 0,
      maximum: 1,
      default: 1,
      description: 'Ratio of the *traceidratio samplers (0 to 1).',
    },
    OTEL_SERVICE_NAME: {
      type: 'string',
      minLength: 1,
      default: serviceName,
      description: 'service.name of the spans.',
    },
  } as const;
}

/** The OTEL_* variables once validated against {@link otelEnvSchema} (defaults applied). */
export interface OtelEnv {
  readonly OTEL_EXPORTER_OTLP_ENDPOINT: string;
  readonly OTEL_EXPORTER_OTLP_PROTOCOL: string;
  readonly OTEL_TRACES_SAMPLER: string;
  readonly OTEL_TRACES_SAMPLER_ARG: number;
  readonly OTEL_SERVICE_NAME: string;
}

/** The tracing settings of validated OTEL_* variables; undefined (tracing off) without an endpoint. */
export function tracingConfig(env: OtelEnv): TracingConfig | undefined {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  return {
    endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
    protocol: env.OTEL_EXPORTER_OTLP_PROTOCOL as TracingConfig['protocol'],
    sampler: env.OTEL_TRACES_SAMPLER as TracingConfig['sampler'],
    samplerRatio: env.OTEL_TRACES_SAMPLER_ARG,
    serviceName: env.OTEL_SERVICE_NAME,
  };
}
