import { describe, expect, it } from '@jest/globals';
import { PassThrough, Readable } from 'node:stream';

import { readLimited } from '../../../src/exec/read-limited.js';

describe('readLimited', () => {
  it('reads every chunk up to the end', async () => {
    const s = Readable.from([Buffer.from('ab'), Buffer.from('cd')]);
    expect((await readLimited(s, 4)).toString()).toBe('abcd');
  });

  it('destroys the stream and throws payload-too-large past the limit', async () => {
    const s = new PassThrough();
    const read = readLimited(s, 3);
    s.write('ab');
    s.write('cd');
    await expect(read).rejects.toMatchObject({ slug: 'payload-too-large' });
    expect(s.destroyed).toBe(true);
  });

  it("rejects with the stream's error", async () => {
    const s = new PassThrough();
    const read = readLimited(s, 100);
    s.write('ab');
    s.destroy(new Error('reset'));
    await expect(read).rejects.toThrow('reset');
  });

  it('rejects when the stream closes before its end (a cut-off body)', async () => {
    const s = new PassThrough();
    const read = readLimited(s, 100);
    s.write('ab');
    s.destroy();
    await expect(read).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
  });

  it('rejects for a stream destroyed before reading', async () => {
    const s = new PassThrough();
    s.destroy();
    await expect(readLimited(s, 100)).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
  });
});
