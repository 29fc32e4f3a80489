/**
 * Configuration of the web console (docs/adr/0032-web-console-and-previews.md): its environment
 * key, spread into the gateway's schema by config.ts. The console's static files are built with
 * the gateway image (console/ workspace, bundled by esbuild) and served from this directory.
 */

/** The console keys of the gateway's environment schema (config.ts spreads them in). */
export const consoleEnvSchema = {
  /**
   * Directory holding the console's built files (index.html, console.js, console.css), read once
   * at start. The gateway image sets it to /opt/api-gateway/console. Empty (default outside the
   * image): /console is not served. Chart: gateway.console.enabled=false sets it empty.
   */
  GATEWAY_CONSOLE_DIR: { type: 'string', default: '' },
} as const;

/** The console, when its files are installed. */
export interface ConsoleConfig {
  dir: string;
}

/** The console configuration, or undefined while GATEWAY_CONSOLE_DIR is empty. */
export function consoleConfig(e: { GATEWAY_CONSOLE_DIR: string }): ConsoleConfig | undefined {
  return e.GATEWAY_CONSOLE_DIR === '' ? undefined : { dir: e.GATEWAY_CONSOLE_DIR };
}
