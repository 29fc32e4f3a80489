/**
 * The gateway with previews on (domain preview.test, http) and the console's files in memory,
 * listening on 127.0.0.1, with a fake store whose sessions' pod IP is 127.0.0.1 (a "sandbox
 * server" of the test listens there) and a settable clock. `send` speaks HTTP with any Host
 * header (fetch cannot set Host), as a browser on a preview origin would.
 */
import http from 'node:http';

import type { FastifyInstance } from 'fastify';

import { buildApp } from '../../src/app.js';
import { loadConfig, type GatewayConfig } from '../../src/config.js';
import { consoleAssets } from '../../src/console/index.js';
import { WinstonFastifyLogger, silentWinston } from '../../src/logger.js';
import { createPreviewDeps } from '../../src/preview/index.js';
import { FakeActivity, TEST_ENV, testKeys } from './app.js';
import { FakeStore } from './fake-store.js';
import { FakeTransport } from './fake-transport.js';

/** The master key of these tests. */
export const PREVIEW_MASTER_KEY = Buffer.alloc(32, 7);
/** The preview domain of these tests. */
export const PREVIEW_DOMAIN = 'preview.test';

/** The console files of these tests (the real build is checked by console/ and the e2e). */
export const TEST_INDEX =
  '<!doctype html><html><head><link rel="stylesheet" href="console.css" nonce="__CSP_NONCE__">' +
  '<script src="console.js" defer nonce="__CSP_NONCE__"></script></head><body></body></html>';

/** The app, its fakes and its clock. */
export interface PreviewApp {
  app: FastifyInstance;
  url: string;
  port: number;
  store: FakeStore;
  config: GatewayConfig;
  /** Milliseconds added to the real clock (expire links without waiting). */
  clock: { offsetMs: number };
  close(): Promise<void>;
}

/** Starts the app (`env` overrides the test environment). */
export async function startPreviewApp(env: Record<string, string> = {}): Promise<PreviewApp> {
  const config = loadConfig({
    ...TEST_ENV,
    GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
    GATEWAY_PREVIEW_DOMAIN: PREVIEW_DOMAIN,
    GATEWAY_PREVIEW_SCHEME: 'http',
    GATEWAY_PREVIEW_MAX_TTL_SECONDS: '600',
    ...env,
  });
  const store = new FakeStore();
  const clock = { offsetMs: 0 };
  const previews = createPreviewDeps(config.preview, PREVIEW_MASTER_KEY);
  const app = await buildApp({
    config,
    logger: new WinstonFastifyLogger(silentWinston()),
    keys: await testKeys(),
    store,
    transports: { Agent: new FakeTransport(), KubernetesExec: new FakeTransport() },
    activity: new FakeActivity(),
    console: consoleAssets(TEST_INDEX, { 'console.js': 'void 0;\n', 'console.css': 'body{}\n' }),
    ...(previews ? { previews: { ...previews, now: () => Date.now() + clock.offsetMs } } : {}),
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    app,
    url,
    port: Number(new URL(url).port),
    store,
    config,
    clock,
    close: () => app.close(),
  };
}

/** An answer read whole. */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One HTTP request to the app with the given Host (and other headers). */
export function send(
  g: PreviewApp,
  o: { host: string; path: string; method?: string; headers?: Record<string, string>; body?: string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: g.port,
        method: o.method ?? 'GET',
        path: o.path,
        headers: { ...o.headers, host: o.host },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

/** The preview host of a port of a session. */
export function previewHost(port: number, session: string, namespace: string): string {
  return `${port}-${session}--${namespace}.${PREVIEW_DOMAIN}`;
}
