/**
 * Output decoding. The gateway sends a command's output as UTF-8 text when the bytes were valid
 * UTF-8, else as base64 (`encoding`), so binary output survives JSON. These helpers give the bytes
 * back without Node's Buffer (the package runs wherever fetch exists).
 */
import type { ExecOutputEvent, ExecResult, OutputEncoding } from './types.js';

/** The bytes of an output string in the given encoding. */
export function decodeOutput(data: string, encoding: OutputEncoding): Uint8Array {
  if (encoding === 'base64') {
    const binary = atob(data);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  }
  return new TextEncoder().encode(data);
}

/** Bytes as base64 (streamed stdin lines), without Buffer. */
export function encodeBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let at = 0; at < bytes.length; at += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  }
  return btoa(binary);
}

/** The output of a stream event as bytes. */
export function eventBytes(event: ExecOutputEvent): Uint8Array {
  return decodeOutput(event.data, event.encoding);
}

/** A result's stdout as bytes. */
export function stdoutBytes(result: ExecResult): Uint8Array {
  return decodeOutput(result.stdout, result.stdoutEncoding);
}

/** A result's stderr as bytes. */
export function stderrBytes(result: ExecResult): Uint8Array {
  return decodeOutput(result.stderr, result.stderrEncoding);
}
