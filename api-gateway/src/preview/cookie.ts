/**
 * The preview cookie (ADR 0032): set by a preview link on that preview's own origin only (no
 * Domain attribute: a host-only cookie; `__Host-` prefixed and Secure over https), HttpOnly so the
 * sandbox's pages cannot read it, SameSite=Lax so other sites' forms and scripts do not carry it
 * (a link from the console, a top-level navigation, does). It is removed from the request before
 * anything is forwarded: the sandbox's server never sees it. Pure functions.
 */

/** The cookie's name for a scheme (`__Host-` needs Secure, hence https only). */
export function cookieName(scheme: 'http' | 'https'): string {
  return scheme === 'https' ? '__Host-sandbox-preview' : 'sandbox-preview';
}

/** The Set-Cookie value holding `token` for `maxAgeSeconds`. */
export function setCookie(token: string, o: { scheme: 'http' | 'https'; maxAgeSeconds: number }): string {
  const secure = o.scheme === 'https' ? '; Secure' : '';
  return `${cookieName(o.scheme)}=${token}; Path=/; Max-Age=${Math.max(0, Math.floor(o.maxAgeSeconds))}; HttpOnly; SameSite=Lax${secure}`;
}

/** Splits a Cookie header into its pairs (name, value, and the pair as sent). */
function pairs(header: string): Array<{ name: string; value: string; raw: string }> {
  return header
    .split(';')
    .map((raw) => raw.trim())
    .filter((raw) => raw.length > 0)
    .map((raw) => {
      const eq = raw.indexOf('=');
      return eq < 0
        ? { name: '', value: raw, raw }
        : { name: raw.slice(0, eq).trim(), value: raw.slice(eq + 1).trim(), raw };
    });
}

/**
 * Every value of cookie `name` in a Cookie header (a page of a sibling preview can set a cookie of
 * the same name for the whole domain, so there may be several: each is checked).
 */
export function cookieValues(header: string | undefined, name: string, max = 8): string[] {
  if (header === undefined) return [];
  return pairs(header)
    .filter((p) => p.name === name)
    .slice(0, max)
    .map((p) => p.value);
}

/** The Cookie header without cookie `name` (undefined when nothing is left). */
export function withoutCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  const kept = pairs(header).filter((p) => p.name !== name);
  return kept.length === 0 ? undefined : kept.map((p) => p.raw).join('; ');
}
