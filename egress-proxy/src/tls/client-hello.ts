/**
 * Reads the server name (SNI) of a TLS ClientHello. Pure parsing of bytes the sandbox sent:
 * hostile input, so every length is checked against what is there and the caller bounds how
 * much it buffers (CLIENT_HELLO_MAX_BYTES).
 */

/** Most bytes buffered while waiting for a whole ClientHello (a record is at most 16 KiB + 5). */
export const CLIENT_HELLO_MAX_BYTES = 16 * 1024 + 5;

/** What the first bytes of a CONNECT tunnel are. */
export type HelloParse =
  { state: 'incomplete' } | { state: 'not-tls' } | { state: 'hello'; serverName: string | undefined };

/** Parses the first TLS record of `buf` (a handshake record holding a ClientHello). */
export function parseClientHello(buf: Buffer): HelloParse {
  if (buf.length < 1) return { state: 'incomplete' };
  if (buf[0] !== 0x16) return { state: 'not-tls' };
  if (buf.length < 5) return { state: 'incomplete' };
  if (buf[1] !== 0x03) return { state: 'not-tls' };
  const recordLen = buf.readUInt16BE(3);
  if (buf.length < 5 + recordLen) return { state: 'incomplete' };
  const hs = buf.subarray(5, 5 + recordLen);
  // One ClientHello fits one record in practice (clients send it whole, < 16 KiB); a hello split
  // over records is refused rather than reassembled.
  if (hs.length < 4 || hs[0] !== 0x01) return { state: 'not-tls' };
  const helloLen = hs.readUIntBE(1, 3);
  if (4 + helloLen > hs.length) return { state: 'not-tls' };
  try {
    return { state: 'hello', serverName: serverName(hs.subarray(4, 4 + helloLen)) };
  } catch {
    return { state: 'not-tls' };
  }
}

/** A bounds-checked cursor over a buffer: every read throws past the end. */
class Cursor {
  constructor(
    private readonly b: Buffer,
    public pos = 0,
  ) {}
  take(n: number): Buffer {
    if (n < 0 || this.pos + n > this.b.length) throw new RangeError('truncated');
    const out = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  u8(): number {
    return this.take(1)[0]!;
  }
  u16(): number {
    return this.take(2).readUInt16BE(0);
  }
  get left(): number {
    return this.b.length - this.pos;
  }
}

function serverName(hello: Buffer): string | undefined {
  const c = new Cursor(hello);
  c.take(2 + 32); // version, random
  c.take(c.u8()); // session id
  c.take(c.u16()); // cipher suites
  c.take(c.u8()); // compression methods
  if (c.left === 0) return undefined; // no extensions
  const ext = new Cursor(c.take(c.u16()));
  while (ext.left > 0) {
    const type = ext.u16();
    const body = new Cursor(ext.take(ext.u16()));
    if (type !== 0x0000) continue;
    const list = new Cursor(body.take(body.u16()));
    while (list.left > 0) {
      const nameType = list.u8();
      const name = list.take(list.u16());
      if (nameType === 0) return name.toString('latin1');
    }
    return undefined;
  }
  return undefined;
}
