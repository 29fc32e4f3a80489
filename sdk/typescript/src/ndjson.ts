/**
 * NDJSON lines of a streaming answer, decoded as they arrive. A line longer than `maxLineBytes` is
 * refused (the stream relays a sandbox's output: hostile input, memory must stay bounded).
 */
import { ProtocolError } from './errors.js';

/** Yields each non-empty line's parsed JSON value. */
export async function* ndjsonLines(
  body: ReadableStream<Uint8Array>,
  maxLineBytes: number,
): AsyncGenerator<unknown, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let partial = '';
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const { lines, rest } = splitLines(partial + decoder.decode(value, { stream: true }));
      for (const line of lines) yield parseLine(line);
      partial = rest;
      // A string's length is at least its UTF-8 byte count / 3; a partial line this long is refused.
      if (partial.length > maxLineBytes) {
        throw new ProtocolError(`a stream line is longer than ${maxLineBytes} bytes`);
      }
    }
    partial += decoder.decode();
    if (partial.trim()) yield parseLine(partial);
    finished = true;
  } finally {
    // The consumer stopped early (break, throw) or the line was refused: stop the download.
    // A failing cancel (the stream already errored) has nothing left to stop.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** Complete non-empty lines of a text, and the incomplete rest after its last newline. */
function splitLines(text: string): { lines: string[]; rest: string } {
  const parts = text.split('\n');
  const rest = parts.pop() ?? '';
  return { lines: parts.filter((l) => l.trim() !== ''), rest };
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch (err) {
    throw new ProtocolError(`invalid NDJSON line in the exec stream: ${line.slice(0, 80)}`, { cause: err });
  }
}
