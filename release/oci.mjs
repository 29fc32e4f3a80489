// Small readers and writers of oci-archive tarballs (an OCI image layout in one tar, as
// test-e2e/images' imgbuild writes them), for the release: retag an archive (only index.json's
// name annotations change: the manifest, its digest and the layers stay byte for byte) and walk the
// files of an image's layers (for the SBOM). Node built-ins only; tar is read and written here.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

/** Parses a POSIX/GNU tar: [{ name, type, mode, size, linkname, data }] (pax path/linkpath honoured). */
export function readTar(buf) {
  const out = [];
  let pax = {};
  let longName;
  for (let off = 0; off + 512 <= buf.length;) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const str = (a, n) =>
      h
        .subarray(a, a + n)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const size = parseInt(str(124, 12).trim() || '0', 8);
    const type = String.fromCharCode(h[156] || 48);
    const prefix = str(345, 155);
    let name = prefix ? `${prefix}/${str(0, 100)}` : str(0, 100);
    const data = buf.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === 'x') {
      pax = parsePax(data);
      continue;
    }
    if (type === 'g') continue;
    if (type === 'L') {
      longName = data.toString('utf8').replace(/\0.*$/s, '');
      continue;
    }
    name = pax.path ?? longName ?? name;
    const linkname = pax.linkpath ?? str(157, 100);
    out.push({ name, type, mode: parseInt(str(100, 8).trim() || '0', 8), size, linkname, data });
    pax = {};
    longName = undefined;
  }
  return out;
}

function parsePax(data) {
  const rec = {};
  let s = data.toString('utf8');
  while (s.length > 0) {
    const sp = s.indexOf(' ');
    const len = Number(s.slice(0, sp));
    const kv = s.slice(sp + 1, len - 1);
    const eq = kv.indexOf('=');
    rec[kv.slice(0, eq)] = kv.slice(eq + 1);
    s = s.slice(len);
  }
  return rec;
}

/** Writes regular files as a ustar archive with fixed metadata (mtime 0, uid/gid 0, mode 0644). */
export function writeTar(files) {
  const blocks = [];
  for (const { name, data } of files) {
    if (Buffer.byteLength(name) > 100) throw new Error(`tar: name longer than 100 bytes: ${name}`);
    const h = Buffer.alloc(512);
    h.write(name, 0, 'utf8');
    h.write('0000644\0', 100);
    h.write('0000000\0', 108);
    h.write('0000000\0', 116);
    h.write(`${data.length.toString(8).padStart(11, '0')}\0`, 124);
    h.write('00000000000\0', 136);
    h.write('        ', 148);
    h.write('0', 156);
    h.write('ustar\0', 257);
    h.write('00', 263);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** The archive's entries by name, and its index.json. */
export function readArchive(path) {
  const entries = readTar(readFileSync(path));
  const byName = new Map(
    entries.filter((e) => e.type === '0').map((e) => [e.name.replace(/^\.\//, ''), e.data]),
  );
  const index = JSON.parse(byName.get('index.json').toString('utf8'));
  return { byName, index };
}

/** The blob of a digest, checked against it. */
export function blob(byName, digest) {
  const data = byName.get(`blobs/${digest.replace(':', '/')}`);
  if (!data) throw new Error(`oci: blob ${digest} missing`);
  const got = `sha256:${createHash('sha256').update(data).digest('hex')}`;
  if (got !== digest) throw new Error(`oci: blob ${digest} has digest ${got}`);
  return data;
}

/** Writes `src` to `dst` with the one image named `ref` (index annotations only). */
export function retag(src, dst, ref) {
  const { byName, index } = readArchive(src);
  if (index.manifests?.length !== 1)
    throw new Error(`${src}: expected one image, found ${index.manifests?.length}`);
  const tag = ref.slice(ref.lastIndexOf(':') + 1);
  index.manifests[0].annotations = {
    ...index.manifests[0].annotations,
    'io.containerd.image.name': ref,
    'org.opencontainers.image.ref.name': tag,
  };
  byName.set('index.json', Buffer.from(JSON.stringify(index)));
  const names = [...byName.keys()].sort();
  writeFileSync(dst, writeTar(names.map((name) => ({ name, data: byName.get(name) }))));
  return index.manifests[0].digest;
}

/** Every entry of the image's layers, lower layers first, whiteouts applied: Map path -> entry. */
export function imageFiles(path) {
  const { byName, index } = readArchive(path);
  const manifest = JSON.parse(blob(byName, index.manifests[0].digest).toString('utf8'));
  const config = JSON.parse(blob(byName, manifest.config.digest).toString('utf8'));
  const files = new Map();
  for (const layer of manifest.layers) {
    const raw = blob(byName, layer.digest);
    const tar = layer.mediaType.endsWith('gzip') ? gunzipSync(raw) : raw;
    for (const e of readTar(tar)) {
      const p = `/${e.name.replace(/^\.?\//, '').replace(/\/$/, '')}`;
      const base = p.slice(p.lastIndexOf('/') + 1);
      if (base === '.wh..wh..opq') {
        const dir = p.slice(0, p.lastIndexOf('/'));
        for (const k of files.keys()) if (k.startsWith(`${dir}/`)) files.delete(k);
      } else if (base.startsWith('.wh.')) {
        const gone = `${p.slice(0, p.lastIndexOf('/'))}/${base.slice(4)}`;
        for (const k of files.keys()) if (k === gone || k.startsWith(`${gone}/`)) files.delete(k);
      } else files.set(p, e);
    }
  }
  return { index, manifest, config, files };
}
