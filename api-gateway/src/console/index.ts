/**
 * The web console (ADR 0032): its routes (routes.ts), the terminal key bridge (ws-key.ts), its
 * files (assets.ts) and configuration (config.ts).
 */
export { default as consoleRoutes } from './routes.js';
export { default as consoleWsKey, CONSOLE_PROTOCOL, KEY_PROTOCOL_PREFIX } from './ws-key.js';
export { consoleAssets, loadConsoleAssets, type ConsoleAssets } from './assets.js';
