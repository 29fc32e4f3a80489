/**
 * Browser previews of sandbox ports (ADR 0032): each on an origin of its own under the preview
 * domain, opened through a signed, expiring link that sets a cookie for that origin only.
 * - `previewRewrite` (rewrite.ts) is fastify's rewriteUrl: preview hosts reach only the preview
 *   routes;
 * - `previewPlugin` registers the link route (links.ts, authenticated) and the preview origins'
 *   routes (proxy.ts, authenticated by the cookie).
 */
import type { FastifyInstance } from 'fastify';

import type { PreviewConfig } from './config.js';
import { previewLinkRoutes } from './links.js';
import { previewProxyRoutes } from './proxy.js';
import { PreviewTokens } from './token.js';

export { previewRewrite } from './rewrite.js';
export { PREVIEW_AUTH_PATH } from './links.js';

/** What previews need: their configuration and the token signer (undefined: previews off). */
export interface PreviewDeps {
  preview: PreviewConfig;
  tokens: PreviewTokens;
  /** Now, in ms (default Date.now; tests pass a clock). */
  now?: () => number;
}

/** The preview dependencies of a configuration (undefined while previews are off). */
export function createPreviewDeps(
  preview: PreviewConfig | undefined,
  masterKey: Buffer,
): PreviewDeps | undefined {
  return preview ? { preview, tokens: new PreviewTokens(masterKey) } : undefined;
}

/** Options of previewPlugin. */
export interface PreviewPluginOptions {
  previews: PreviewDeps | undefined;
}

/**
 * The preview routes, each set in its own context (the preview origins' routes pass bodies through
 * with their own content-type parser; the link route takes JSON). Registered always: with previews
 * off the link route answers 404 naming GATEWAY_PREVIEW_DOMAIN.
 */
export async function previewPlugin(app: FastifyInstance, opts: PreviewPluginOptions): Promise<void> {
  const deps = opts.previews;
  const now = deps?.now ?? Date.now;
  await app.register((child: FastifyInstance, _o: unknown, done: (err?: Error) => void) => {
    previewLinkRoutes(child, { preview: deps?.preview, tokens: deps?.tokens, now });
    done();
  });
  if (!deps) return;
  await app.register((child: FastifyInstance, _o: unknown, done: (err?: Error) => void) => {
    previewProxyRoutes(child, { preview: deps.preview, tokens: deps.tokens, now });
    done();
  });
}
