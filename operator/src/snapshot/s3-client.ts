/**
 * A small S3 client (path-style, SigV4) for the snapshot store: the five calls the operator needs
 * (put, get as a stream, list by prefix, delete, and the bucket check), over node:http(s) with a
 * keep-alive pool. Every call has a deadline: the socket may be idle at most `timeoutMs` (an object
 * store that stops answering, or a stopped process that keeps its port, fails the call instead of
 * hanging it). Answers the client reads whole (errors, listings) are bounded. Credentials never
 * reach a log or an error message.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

import { EMPTY_SHA256, canonicalQuery, encodePath, signRequest, type S3Credentials } from './s3-sign.js';

/** Where and how to reach the store. */
export interface S3Options {
  /** http(s)://host[:port] of the S3 API. */
  readonly endpoint: string;
  readonly bucket: string;
  readonly region: string;
  readonly credentials: S3Credentials;
  /** Longest a socket may stay idle in a call (connect, first byte, between chunks). */
  readonly timeoutMs: number;
  /** Sockets kept to the store. */
  readonly maxSockets?: number;
}

/** Why a store call failed. */
export type StoreFailure = 'unavailable' | 'refused' | 'not-found';

/** A failed store call; `kind` says whether retrying may help. The message never holds a secret. */
export class StoreError extends Error {
  override readonly name = 'StoreError';
  constructor(
    readonly kind: StoreFailure,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The store as the snapshot code sees it (a narrow port: tests use a fake). */
export interface ObjectStore {
  /** Creates the bucket when it does not exist. */
  ensureBucket(): Promise<void>;
  put(key: string, body: Buffer, sha256Hex: string): Promise<void>;
  /** The object's bytes as a stream; StoreError not-found when it does not exist. */
  get(key: string): Promise<AsyncIterable<Buffer>>;
  /** Every key under a prefix (at most `max`). */
  list(prefix: string, max?: number): Promise<string[]>;
  /** Deletes a key (a missing key is fine). */
  delete(key: string): Promise<void>;
  /** Where the store is, for messages (no secrets). */
  readonly describe: string;
}

/** Largest answer read whole (an error document, a listing page of 1000 keys). */
const MAX_SMALL_ANSWER = 4 * 1024 * 1024;
/** Keys per listing page (S3's maximum). */
const LIST_PAGE = 1000;

interface Call {
  readonly method: 'GET' | 'PUT' | 'DELETE' | 'HEAD';
  readonly key?: string;
  readonly query?: Record<string, string>;
  readonly body?: Buffer;
  readonly sha256?: string;
}

/** The client. */
export class S3Client implements ObjectStore {
  private readonly url: URL;
  private readonly agent: HttpAgent;
  readonly describe: string;

  constructor(private readonly opts: S3Options) {
    this.url = new URL(opts.endpoint);
    const agentOpts = { keepAlive: true, maxSockets: opts.maxSockets ?? 16 };
    this.agent = this.url.protocol === 'https:' ? new HttpsAgent(agentOpts) : new HttpAgent(agentOpts);
    this.describe = `bucket ${opts.bucket} at ${this.url.origin}`;
  }

  async ensureBucket(): Promise<void> {
    const res = await this.send({ method: 'HEAD' });
    res.resume();
    if (res.statusCode === 200) return;
    if (res.statusCode !== 404) throw await failure(res, `HEAD ${this.describe}`);
    const created = await this.send({ method: 'PUT' });
    if (created.statusCode === 200 || created.statusCode === 409) {
      created.resume();
      return;
    }
    throw await failure(created, `create ${this.describe}`);
  }

  async put(key: string, body: Buffer, sha256Hex: string): Promise<void> {
    const res = await this.send({ method: 'PUT', key, body, sha256: sha256Hex });
    if (res.statusCode === 200) {
      res.resume();
      return;
    }
    throw await failure(res, `PUT ${key}`);
  }

  async get(key: string): Promise<AsyncIterable<Buffer>> {
    const res = await this.send({ method: 'GET', key });
    if (res.statusCode === 200) return res;
    throw await failure(res, `GET ${key}`);
  }

  async list(prefix: string, max = 1_000_000): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const query: Record<string, string> = { 'list-type': '2', prefix, 'max-keys': String(LIST_PAGE) };
      if (token) query['continuation-token'] = token;
      const res = await this.send({ method: 'GET', query });
      if (res.statusCode !== 200) throw await failure(res, `list ${prefix}`);
      const xml = await readSmall(res);
      keys.push(...xmlValues(xml, 'Key'));
      token =
        xmlValues(xml, 'IsTruncated')[0] === 'true' ? xmlValues(xml, 'NextContinuationToken')[0] : undefined;
      if (keys.length > max) throw new StoreError('refused', `more than ${max} objects under ${prefix}`);
    } while (token);
    return keys;
  }

  async delete(key: string): Promise<void> {
    const res = await this.send({ method: 'DELETE', key });
    if (res.statusCode === 204 || res.statusCode === 200 || res.statusCode === 404) {
      res.resume();
      return;
    }
    throw await failure(res, `DELETE ${key}`);
  }

  /** Sends one signed request; resolves with the response (headers read), body unread. */
  private send(call: Call): Promise<IncomingMessage> {
    const path = encodePath(this.opts.bucket, call.key);
    const query = call.query ?? {};
    const search = canonicalQuery(query);
    const headers = signRequest(
      {
        method: call.method,
        host: this.url.host,
        path,
        query,
        payloadSha256: call.sha256 ?? EMPTY_SHA256,
        region: this.opts.region,
        now: new Date(),
        headers: call.body ? { 'content-length': String(call.body.length) } : undefined,
      },
      this.opts.credentials,
    );
    const request = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = request(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname,
          port: this.url.port,
          method: call.method,
          path: search ? `${path}?${search}` : path,
          headers,
          agent: this.agent,
          timeout: this.opts.timeoutMs,
        },
        (res) => {
          res.setTimeout(this.opts.timeoutMs, () =>
            res.destroy(
              new StoreError('unavailable', `${this.describe}: no data for ${this.opts.timeoutMs} ms`),
            ),
          );
          resolve(res);
        },
      );
      req.on('timeout', () =>
        req.destroy(
          new StoreError('unavailable', `${this.describe}: no answer in ${this.opts.timeoutMs} ms`),
        ),
      );
      req.on('error', (err) =>
        reject(
          err instanceof StoreError
            ? err
            : new StoreError('unavailable', `${this.describe}: ${errorCode(err)}`, { cause: err }),
        ),
      );
      req.end(call.body);
    });
  }
}

/** An error answer as a StoreError: 404 not-found, 5xx unavailable, other 4xx refused. */
async function failure(res: IncomingMessage, what: string): Promise<StoreError> {
  const status = res.statusCode ?? 0;
  const body = await readSmall(res).catch(() => '');
  const code = xmlValues(body, 'Code')[0] ?? '';
  const kind: StoreFailure = status === 404 ? 'not-found' : status >= 500 ? 'unavailable' : 'refused';
  return new StoreError(kind, `${what}: HTTP ${status}${code ? ` ${code}` : ''}`);
}

async function readSmall(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_SMALL_ANSWER) {
      res.destroy();
      throw new StoreError('refused', `an answer of the store is larger than ${MAX_SMALL_ANSWER} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The text of every `<tag>...</tag>` (S3's XML is flat enough for this; entities decoded). */
function xmlValues(xml: string, tag: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g');
  for (const m of xml.matchAll(re)) out.push(decodeXml(m[1] ?? ''));
  return out;
}

function decodeXml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&amp;/g, '&');
}

function errorCode(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ?? e.message;
}
