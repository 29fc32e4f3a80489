/**
 * The console's security headers (ADR 0032). Script only from the gateway's own origin, never
 * inline (no 'unsafe-inline', no eval); `<style>` elements only from the console's files or with
 * the answer's nonce (xterm.js creates a few at run time; console/src/nonce.ts stamps them);
 * style attributes set by xterm.js for 24-bit colours are allowed (style-src-attr), which no
 * script can use; images from the origin or blob: (file previews); fetch and WebSockets to the
 * origin only; no frames, no forms posting anywhere, no plugins, no <base>.
 */

/** The Content-Security-Policy of the console's answers. */
export function consoleCsp(nonce: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `style-src-elem 'self' 'nonce-${nonce}'`,
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

/** Every header of a console answer (index.html with its nonce; the other files with any). */
export function consoleHeaders(nonce: string): Record<string, string> {
  return {
    'content-security-policy': consoleCsp(nonce),
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  };
}
