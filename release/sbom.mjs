// node release/sbom.mjs IMAGE.tar WORKSPACE VERSION > IMAGE.spdx.json
// An SPDX 2.3 JSON SBOM of one image archive: every regular file of its layers (whiteouts applied)
// with SHA-1 and SHA-256, the Debian packages its files come from (read from this machine's dpkg
// database, which the daemonless builder copied them from: docs/images.md), and the npm packages
// of WORKSPACE's production dependency tree (`npm ls --omit=dev`; the bundle holds those it
// imports, so this list is a superset). Deterministic: the creation time is $SOURCE_DATE_EPOCH (0).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { imageFiles } from './oci.mjs';

const [archive, workspace, version] = process.argv.slice(2);
if (!archive || !workspace || !version) {
  console.error('usage: sbom.mjs IMAGE.tar WORKSPACE VERSION');
  process.exit(2);
}
const root = join(import.meta.dirname, '..');
const { index, manifest, config, files } = imageFiles(archive);
const ref = index.manifests[0].annotations['io.containerd.image.name'];
const digest = index.manifests[0].digest;
const id = (kind, s) => `SPDXRef-${kind}-${s.replace(/[^A-Za-z0-9.-]/g, '-')}`;

/** path -> Debian package, and package -> version, from the host's dpkg database. */
function debianOwners() {
  const owner = new Map();
  const dir = '/var/lib/dpkg/info';
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.list')) continue;
    const pkg = f.slice(0, -5).replace(/:.*$/, '');
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      if (!line) continue;
      owner.set(line, pkg);
      // merged /usr: dpkg lists /lib/x, /bin/x; images hold /usr/lib/x behind the /lib symlink.
      const m = /^\/(bin|sbin|lib|lib32|lib64|libx32)\//.exec(line);
      if (m) owner.set(`/usr${line}`, pkg);
    }
  }
  const versions = new Map();
  const out = execFileSync('dpkg-query', ['-W', '-f', '${Package}\t${Version}\t${Architecture}\n'], {
    encoding: 'utf8',
  });
  for (const line of out.split('\n')) {
    const [name, v, arch] = line.split('\t');
    if (name) versions.set(name, { version: v, arch });
  }
  return { owner, versions };
}

/** name@version of the workspace's production dependency tree. */
function npmPackages() {
  const out = execFileSync('npm', ['ls', '--omit=dev', '--all', '--json', '-w', workspace], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const seen = new Map();
  const walk = (deps) => {
    for (const [name, d] of Object.entries(deps ?? {})) {
      if (!d.version || name.startsWith('@sandbox-platform/')) {
        walk(d.dependencies);
        continue;
      }
      const key = `${name}@${d.version}`;
      if (seen.has(key)) continue;
      seen.set(key, { name, version: d.version });
      walk(d.dependencies);
    }
  };
  walk(JSON.parse(out).dependencies);
  return [...seen.values()].sort((a, b) => (a.name === b.name ? 0 : a.name < b.name ? -1 : 1));
}

const { owner, versions } = debianOwners();
const spdxFiles = [];
const relationships = [
  { spdxElementId: 'SPDXRef-DOCUMENT', relationshipType: 'DESCRIBES', relatedSpdxElement: 'SPDXRef-Image' },
];
/** SHA-1s of the files each package CONTAINS: its packageVerificationCode (SPDX 2.3, 7.9). */
const debs = new Map();
const imageSha1s = [];
for (const [path, e] of [...files.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
  if (e.type !== '0' && e.type !== '\0') continue;
  const fid = id('File', `${spdxFiles.length}`);
  spdxFiles.push({
    fileName: `.${path}`,
    SPDXID: fid,
    checksums: [
      { algorithm: 'SHA1', checksumValue: createHash('sha1').update(e.data).digest('hex') },
      { algorithm: 'SHA256', checksumValue: createHash('sha256').update(e.data).digest('hex') },
    ],
    licenseConcluded: 'NOASSERTION',
    copyrightText: 'NOASSERTION',
  });
  const pkg = owner.get(path);
  const sha1 = spdxFiles.at(-1).checksums[0].checksumValue;
  if (pkg) {
    debs.set(pkg, [...(debs.get(pkg) ?? []), sha1]);
    relationships.push({
      spdxElementId: id('Deb', pkg),
      relationshipType: 'CONTAINS',
      relatedSpdxElement: fid,
    });
  } else {
    imageSha1s.push(sha1);
    relationships.push({
      spdxElementId: 'SPDXRef-Image',
      relationshipType: 'CONTAINS',
      relatedSpdxElement: fid,
    });
  }
}
const verificationCode = (sha1s) => ({
  packageVerificationCodeValue: createHash('sha1')
    .update([...sha1s].sort().join(''))
    .digest('hex'),
});
const packages = [
  {
    name: ref,
    SPDXID: 'SPDXRef-Image',
    versionInfo: version,
    downloadLocation: 'NOASSERTION',
    filesAnalyzed: true,
    packageVerificationCode: verificationCode(imageSha1s),
    checksums: [{ algorithm: 'SHA256', checksumValue: digest.slice(7) }],
    primaryPackagePurpose: 'CONTAINER',
    licenseDeclared: config.config?.Labels?.['org.opencontainers.image.licenses'] ?? 'NOASSERTION',
    licenseConcluded: 'NOASSERTION',
    copyrightText: 'NOASSERTION',
    comment: `OCI manifest ${digest}, ${manifest.layers.length} layers; user ${config.config?.User ?? ''}`,
  },
];
for (const name of [...debs.keys()].sort()) {
  const v = versions.get(name) ?? { version: 'NOASSERTION', arch: '' };
  packages.push({
    name,
    SPDXID: id('Deb', name),
    versionInfo: v.version,
    downloadLocation: 'NOASSERTION',
    filesAnalyzed: true,
    packageVerificationCode: verificationCode(debs.get(name)),
    licenseConcluded: 'NOASSERTION',
    licenseDeclared: 'NOASSERTION',
    copyrightText: 'NOASSERTION',
    externalRefs: [
      {
        referenceCategory: 'PACKAGE-MANAGER',
        referenceType: 'purl',
        referenceLocator: `pkg:deb/debian/${name}@${encodeURIComponent(v.version)}${v.arch ? `?arch=${v.arch}` : ''}`,
      },
    ],
  });
  relationships.push({
    spdxElementId: 'SPDXRef-Image',
    relationshipType: 'CONTAINS',
    relatedSpdxElement: id('Deb', name),
  });
}
for (const p of npmPackages()) {
  const pid = id('Npm', `${p.name}-${p.version}`);
  packages.push({
    name: p.name,
    SPDXID: pid,
    versionInfo: p.version,
    downloadLocation: 'NOASSERTION',
    filesAnalyzed: false,
    licenseConcluded: 'NOASSERTION',
    licenseDeclared: 'NOASSERTION',
    copyrightText: 'NOASSERTION',
    externalRefs: [
      {
        referenceCategory: 'PACKAGE-MANAGER',
        referenceType: 'purl',
        referenceLocator: `pkg:npm/${p.name.replace('@', '%40')}@${p.version}`,
      },
    ],
    comment: `production dependency of the ${workspace} workspace, bundled into the image's JavaScript`,
  });
  relationships.push({
    spdxElementId: 'SPDXRef-Image',
    relationshipType: 'CONTAINS',
    relatedSpdxElement: pid,
  });
}
const created = new Date(Number(process.env.SOURCE_DATE_EPOCH ?? 0) * 1000)
  .toISOString()
  .replace(/\.\d+Z$/, 'Z');
const doc = {
  spdxVersion: 'SPDX-2.3',
  dataLicense: 'CC0-1.0',
  SPDXID: 'SPDXRef-DOCUMENT',
  name: `${ref} (${digest})`,
  documentNamespace: `https://github.com/sandboxsession/platform/spdx/${encodeURIComponent(ref)}/${digest.slice(7)}`,
  creationInfo: {
    created,
    creators: ['Tool: sandbox-platform-release-sbom.mjs', 'Organization: sandbox-platform'],
  },
  packages,
  files: spdxFiles,
  relationships,
};
process.stdout.write(`${JSON.stringify(doc, null, 1)}\n`);
console.error(
  `sbom ${ref}: ${spdxFiles.length} files, ${debs.size} Debian packages, ${packages.length - 1 - debs.size} npm packages`,
);
