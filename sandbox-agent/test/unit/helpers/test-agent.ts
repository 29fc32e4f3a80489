/**
 * A real agent (real bash, real HTTP on an ephemeral loopback port, temp workspace) and a raw
 * HTTP client for tests. Raw node:http, not fetch: fetch normalizes `..` out of URLs, and the
 * traversal tests must send them as they are.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startAgent, type RunningAgent, type StartOptions } from '../../../src/agent.js';
import { agentConfig, type AgentConfig } from '../../../src/config.js';
import type { ExecResponse } from '../../../src/exec/observers.js';

/** A response with its body read. */
export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** True when the request went out on a reused keep-alive connection. */
  reusedSocket: boolean;
}

/** A request as sent on the wire. */
export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** An agent under test and helpers bound to it. */
export class TestAgent {
  readonly httpAgent = new Agent({ keepAlive: true, maxSockets: 4 });

  private constructor(
    readonly running: RunningAgent,
    readonly token: string,
    readonly workspace: string,
    /** Log lines the agent wrote (JSON). */
    readonly logs: string[],
  ) {}

  /** Starts an agent with a fresh workspace and token; `overrides` tune the config, `options` the wiring. */
  static async start(
    overrides: Partial<AgentConfig> = {},
    options: Omit<StartOptions, 'logSink'> = {},
  ): Promise<TestAgent> {
    const workspace = await realpath(await mkdtemp(join(tmpdir(), 'sbx-agent-')));
    const token = randomBytes(32).toString('hex');
    const logs: string[] = [];
    const config = agentConfig({
      token,
      workspace,
      port: 0,
      host: '127.0.0.1',
      logLevel: 'debug',
      ...overrides,
    });
    // HOME is the workspace, as in a sandbox Pod: an interactive bash (the terminal) must not read
    // the developer's own ~/.bashrc (one that waited a minute on a stale pyenv lock hung every
    // terminal test).
    const running = await startAgent(config, {
      baseEnv: { ...process.env, HOME: workspace },
      ...options,
      logSink: (line) => logs.push(line),
    });
    return new TestAgent(running, token, workspace, logs);
  }

  /** Stops the agent and removes the workspace. */
  async stop(graceMs = 0): Promise<void> {
    await this.running.close(graceMs);
    this.httpAgent.destroy();
    await rm(this.workspace, { recursive: true, force: true });
  }

  /**
   * Sends a request; `auth` false omits the token, a string replaces it. `ownConnection` opens a
   * connection for this request alone (the shared pool has 4).
   */
  send(
    req: RawRequest,
    auth: boolean | string = true,
    opts: { ownConnection?: boolean } = {},
  ): Promise<RawResponse> {
    const headers: Record<string, string> = { ...req.headers };
    if (auth !== false) headers.authorization = `Bearer ${auth === true ? this.token : auth}`;
    return new Promise((resolve, reject) => {
      const r = request(
        {
          host: '127.0.0.1',
          port: this.running.port,
          method: req.method,
          path: req.path,
          headers,
          agent: opts.ownConnection ? false : this.httpAgent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks),
              reusedSocket: r.reusedSocket,
            }),
          );
          res.on('error', reject);
        },
      );
      r.on('error', reject);
      r.end(req.body);
    });
  }

  /** POST /v1/exec; fails the test unless the answer is 200. */
  async exec(body: Record<string, unknown>): Promise<ExecResponse> {
    const res = await this.send({
      method: 'POST',
      path: '/v1/exec',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`exec answered ${res.status}: ${res.body.toString()}`);
    return JSON.parse(res.body.toString()) as ExecResponse;
  }

  /** Runs a command and returns its stdout (fails on a non-zero exit). */
  async sh(command: string): Promise<string> {
    const res = await this.exec({ command });
    if (res.exitCode !== 0) throw new Error(`"${command}" exited ${res.exitCode}: ${res.stderr}`);
    return res.stdout;
  }
}

/** Parses a problem+json body. */
export function problemOf(res: RawResponse): { type: string; title: string; status: number; detail: string } {
  expectContentType(res, 'application/problem+json');
  return JSON.parse(res.body.toString()) as { type: string; title: string; status: number; detail: string };
}

function expectContentType(res: RawResponse, type: string): void {
  if (res.headers['content-type'] !== type) {
    throw new Error(`expected ${type}, got ${res.headers['content-type']}: ${res.body.toString()}`);
  }
}

/** A marker unique to one test run, to find exactly the processes a test started. */
export function uniqueSleepSeconds(): string {
  return `100.${randomBytes(3).readUIntBE(0, 3)}`;
}

/** Pids of live (non-zombie) processes whose command line contains `fragment`. */
export async function processesMatching(fragment: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const [cmdline, stat] = await Promise.all([
      readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => ''),
      readFile(`/proc/${entry}/stat`, 'utf8').catch(() => ''),
    ]);
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (cmdline.replaceAll('\0', ' ').includes(fragment) && state !== 'Z' && state !== '')
      pids.push(Number(entry));
  }
  return pids;
}

/** Waits until `check` holds, polling; throws with `what` after `ms`. */
export async function eventually(what: string, check: () => Promise<boolean>, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for: ${what}`);
}
