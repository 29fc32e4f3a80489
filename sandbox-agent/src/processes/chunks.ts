/**
 * Reading a process's output for the wire: bytes from an offset, spelled as UTF-8 text when they
 * are, else base64. While more output may come, a character cut at the end of what is there now is
 * left for the next read (the next offset points at its first byte), so text written in pieces
 * stays text; binary output is never held back. Offsets always count bytes, so a client resumes
 * exactly where it stopped.
 */
import { isUtf8 } from 'node:buffer';

import type { OutputChunk } from '@sandbox-platform/api';

import { encodeOutput, incompleteUtf8Tail } from '../exec/encoding.js';
import type { OutputRing } from './output-ring.js';

/** Up to `maxBytes` from `offset` (at most the ring's size). `final`: no more bytes will come. */
export function readChunk(ring: OutputRing, offset: number, maxBytes: number, final: boolean): OutputChunk {
  const read = ring.read(offset, maxBytes);
  const tail = final ? 0 : incompleteUtf8Tail(read.bytes);
  const text = read.bytes.subarray(0, read.bytes.length - tail);
  const sent = tail > 0 && isUtf8(text) ? text : read.bytes;
  const { data, encoding } = encodeOutput(sent);
  return {
    offset: read.offset,
    nextOffset: read.offset + sent.length,
    skipped: read.skipped,
    data,
    encoding,
  };
}
