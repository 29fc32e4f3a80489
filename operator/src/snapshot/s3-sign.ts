/**
 * AWS Signature Version 4 for S3 requests (path-style), as a pure function: the canonical request,
 * the string to sign and the Authorization header of one request. The payload hash is given by
 * the caller (the client hashes every body it sends anyway: the parts' sha256 go into the
 * snapshot's manifest). Reference: docs.aws.amazon.com, "Signature Version 4 signing process".
 */
import { createHash, createHmac } from 'node:crypto';

/** Credentials of the object store. Never logged. */
export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** One request to sign. */
export interface SignInput {
  readonly method: string;
  /** Host header value (host[:port]). */
  readonly host: string;
  /** The path, already URI-encoded segment by segment (see {@link encodePath}). */
  readonly path: string;
  /** Query parameters (unencoded). */
  readonly query?: Readonly<Record<string, string>>;
  /** Hex SHA-256 of the body (EMPTY_SHA256 for none). */
  readonly payloadSha256: string;
  readonly region: string;
  readonly now: Date;
  /** Further headers to sign (lower-case names). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** SHA-256 of the empty body. */
export const EMPTY_SHA256 = createHash('sha256').digest('hex');

/** The headers to send: host, x-amz-date, x-amz-content-sha256, authorization and the extras. */
export function signRequest(input: SignInput, creds: S3Credentials): Record<string, string> {
  const amzDate = input.now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = {
    ...input.headers,
    host: input.host,
    'x-amz-content-sha256': input.payloadSha256,
    'x-amz-date': amzDate,
  };
  const names = Object.keys(headers).sort();
  const canonicalHeaders = names.map((n) => `${n}:${String(headers[n]).trim()}\n`).join('');
  const signedHeaders = names.join(';');
  const canonical = [
    input.method,
    input.path,
    canonicalQuery(input.query ?? {}),
    canonicalHeaders,
    signedHeaders,
    input.payloadSha256,
  ].join('\n');
  const scope = `${day}/${input.region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonical)].join('\n');
  const key = ['s3', 'aws4_request'].reduce(
    (k, part) => hmac(k, part),
    hmac(hmac(`AWS4${creds.secretAccessKey}`, day), input.region),
  );
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  return {
    ...headers,
    authorization: `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
  };
}

/** `/bucket/key` with every segment URI-encoded as SigV4 wants (RFC 3986 unreserved kept). */
export function encodePath(bucket: string, key = ''): string {
  const segments = [bucket, ...(key === '' ? [] : key.split('/'))];
  return `/${segments.map(uriEncode).join('/')}`;
}

/** The query string in SigV4's canonical form (sorted, encoded); also what is sent. */
export function canonicalQuery(query: Readonly<Record<string, string>>): string {
  return Object.keys(query)
    .sort()
    .map((k) => `${uriEncode(k)}=${uriEncode(query[k] ?? '')}`)
    .join('&');
}

function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
