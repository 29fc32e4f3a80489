/**
 * Configuration of browser previews (docs/adr/0032-web-console-and-previews.md): the environment
 * keys, spread into the gateway's schema by config.ts, and their typed form. A preview is a
 * sandbox port served on an origin of its own, `{port}-{session}--{namespace}.<domain>`, opened
 * through a signed, expiring link. Chart: gateway.preview.*.
 */

/** A lower-case DNS name: labels of letters, digits and inner hyphens, separated by dots. */
const DNS_NAME = '^(?=.{1,200}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$';

/** The preview keys of the gateway's environment schema (config.ts spreads them in). */
export const previewEnvSchema = {
  /**
   * The DNS domain under which every preview has its own host, `{port}-{session}--{namespace}.`
   * followed by this domain (e.g. `preview.example.com` with a wildcard DNS record and certificate
   * for `*.preview.example.com` pointing at the gateway). Use a domain given to previews alone,
   * ideally a registrable domain of its own on the Public Suffix List: every host under
   * it is routed to a sandbox, never to the API or the console. Empty (default): previews off.
   */
  GATEWAY_PREVIEW_DOMAIN: { type: 'string', pattern: `(${DNS_NAME})|^$`, default: '' },
  /**
   * Scheme of the preview links the gateway hands out: `https` (default; the preview cookie is
   * then `Secure` and `__Host-` prefixed) or `http` (local clusters without TLS).
   */
  GATEWAY_PREVIEW_SCHEME: { type: 'string', enum: ['http', 'https'], default: 'https' },
  /** Port written into preview links; 0 (default): the scheme's own (443 or 80). */
  GATEWAY_PREVIEW_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 0 },
  /**
   * Longest lifetime of a preview link, and of the cookie it sets (seconds; default 3600). A
   * link asks for less with `ttlSeconds`. Deleting the session revokes its links at once.
   */
  GATEWAY_PREVIEW_MAX_TTL_SECONDS: { type: 'integer', minimum: 10, maximum: 86400, default: 3600 },
} as const;

/** Previews, when a domain is configured. */
export interface PreviewConfig {
  /** Lower case, no leading or trailing dot. */
  domain: string;
  scheme: 'http' | 'https';
  /** Port in links; 0: the scheme's default. */
  port: number;
  maxTtlSeconds: number;
}

/** The raw values of the preview keys (validated by config.ts). */
export interface PreviewEnv {
  GATEWAY_PREVIEW_DOMAIN: string;
  GATEWAY_PREVIEW_SCHEME: string;
  GATEWAY_PREVIEW_PORT: number;
  GATEWAY_PREVIEW_MAX_TTL_SECONDS: number;
}

/** The preview configuration, or undefined while GATEWAY_PREVIEW_DOMAIN is empty (previews off). */
export function previewConfig(e: PreviewEnv): PreviewConfig | undefined {
  if (e.GATEWAY_PREVIEW_DOMAIN === '') return undefined;
  return {
    domain: e.GATEWAY_PREVIEW_DOMAIN,
    scheme: e.GATEWAY_PREVIEW_SCHEME === 'http' ? 'http' : 'https',
    port: e.GATEWAY_PREVIEW_PORT,
    maxTtlSeconds: e.GATEWAY_PREVIEW_MAX_TTL_SECONDS,
  };
}
