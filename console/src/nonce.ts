/**
 * The CSP nonce for the <style> elements xterm.js creates at run time. The console's CSP allows
 * <style> elements only with the nonce of the page's answer (api-gateway/src/console/csp.ts), and
 * xterm.js offers no way to pass one: every <style> made through document.createElement gets it
 * at creation (before insertion, as browsers require). Markup injected by a parser gets none.
 */

/** Stamps the nonce of `script` on every <style> the document creates; returns it (if any). */
export function installStyleNonce(
  doc: Document,
  script: HTMLScriptElement | SVGScriptElement | null,
): string | undefined {
  const nonce = script && 'nonce' in script ? script.nonce : undefined;
  if (!nonce) return undefined;
  const create = doc.createElement.bind(doc);
  const stamped = (tag: string, options?: ElementCreationOptions): HTMLElement => {
    const node = create(tag, options);
    if (tag.toLowerCase() === 'style') node.setAttribute('nonce', nonce);
    return node;
  };
  doc.createElement = stamped;
  return nonce;
}
