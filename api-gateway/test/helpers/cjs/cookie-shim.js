// Test-only stand-in for the `cookie` package as light-my-request (fastify's inject) requires it.
// cookie 2.x is ESM-only and light-my-request loads it with require(), which jest 30 cannot do on
// Node 20 (it needs Node 24.9+ for require(esm)). light-my-request uses one function of it, to build
// the Cookie header from inject's `cookies` option; this implements that function. CommonJS on
// purpose (see the package.json beside it): jest require()s it.
'use strict';

/** `name=value` with the value percent-encoded, as cookie 2.x does by default. */
function stringifySetCookie(cookie) {
  return `${cookie.name}=${encodeURIComponent(cookie.value)}`;
}

module.exports = { stringifySetCookie };
