/**
 * The tracing configuration (config.ts fills it from the standard OTEL_* variables). Kept apart
 * from tracing.ts so that reading the configuration never loads the OpenTelemetry SDK.
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

/** Tracing settings; tracing is on exactly when one is given. */
export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: base URL; spans are posted to `<endpoint>/v1/traces`. */
  readonly endpoint: string;
  /** OTEL_EXPORTER_OTLP_PROTOCOL. */
  readonly protocol: 'http/protobuf' | 'http/json';
  /** OTEL_TRACES_SAMPLER. */
  readonly sampler: (typeof SAMPLERS)[number];
  /** OTEL_TRACES_SAMPLER_ARG: ratio of the *traceidratio samplers. */
  readonly samplerRatio: number;
  /** OTEL_SERVICE_NAME. */
  readonly serviceName: string;
}
