/**
 * The image allowlist: which container images callers may ask for. Entries are matched on parsed
 * image references, by whole path segments, never as text prefixes (`registry/sandbox*` once
 * admitted `registry/sandboxevil`). Three forms:
 *
 *   registry.example.com/team/python         that repository, any tag or digest
 *   registry.example.com/team/python:3.12    exactly that reference (also `@sha256:...`, or both)
 *   registry.example.com/team/*              any repository below that path, at any depth
 *
 * Anything else, in particular a `*` that is not a whole last segment, is a configuration error
 * (the gateway refuses to start). References are compared as written: `python:3.12` and
 * `docker.io/library/python:3.12` are different entries (no registry defaulting), so an image
 * that is not spelled as the allowlist spells it is refused, never admitted by accident.
 */

/** A parsed image reference. */
export interface ImageRef {
  /** Registry (when the first segment is one) and path: everything before `:tag` and `@digest`. */
  repository: string;
  tag?: string;
  digest?: string;
}

/** One allowlist entry. */
export type AllowEntry =
  | { kind: 'repository'; repository: string }
  | { kind: 'exact'; ref: ImageRef }
  | { kind: 'below'; prefix: string };

/** A parsed allowlist (from GATEWAY_IMAGE_ALLOWLIST). */
export interface ImageAllowlist {
  readonly entries: readonly AllowEntry[];
}

const MAX_REFERENCE_LENGTH = 512;
/** A registry host with an optional port (the first segment, when it has a dot or port, or is localhost). */
const DOMAIN =
  /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(?::\d{1,5})?$/;
/** A path component: lowercase alphanumerics separated by one `.`, one or two `_`, or dashes. */
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^\w[\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;

/** True when a name (registry and path, no tag) is well formed. */
function validName(name: string): boolean {
  const segments = name.split('/');
  const first = segments[0]!;
  const hasDomain =
    segments.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasDomain && !DOMAIN.test(first)) return false;
  return segments.slice(hasDomain ? 1 : 0).every((s) => COMPONENT.test(s));
}

/** Parses `name[:tag][@digest]`; undefined when it is not a valid reference. */
export function parseImageRef(image: string): ImageRef | undefined {
  if (image.length === 0 || image.length > MAX_REFERENCE_LENGTH) return undefined;
  let rest = image;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return undefined;
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return undefined;
  }
  if (!validName(rest)) return undefined;
  return {
    repository: rest,
    ...(tag !== undefined ? { tag } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
}

/** Parses one entry; throws naming the entry when it is none of the three forms. */
export function parseAllowEntry(entry: string): AllowEntry {
  if (entry.endsWith('/*')) {
    const prefix = entry.slice(0, -2);
    if (!prefix.includes('*') && validName(prefix)) return { kind: 'below', prefix };
  } else if (!entry.includes('*')) {
    const ref = parseImageRef(entry);
    if (ref && ref.tag === undefined && ref.digest === undefined) {
      return { kind: 'repository', repository: ref.repository };
    }
    if (ref) return { kind: 'exact', ref };
  }
  throw new Error(
    `"${entry}" is not an allowlist entry: use a repository (registry/path/name), an image ` +
      '(registry/path/name:tag or @digest), or a path ending in "/*"',
  );
}

/** Parses the entries of GATEWAY_IMAGE_ALLOWLIST (fail fast on the first bad one). */
export function parseImageAllowlist(entries: readonly string[]): ImageAllowlist {
  return { entries: entries.map(parseAllowEntry) };
}

function matches(entry: AllowEntry, ref: ImageRef): boolean {
  switch (entry.kind) {
    case 'repository':
      return ref.repository === entry.repository;
    case 'below':
      return ref.repository.startsWith(entry.prefix + '/');
    default:
      return (
        ref.repository === entry.ref.repository &&
        ref.tag === entry.ref.tag &&
        ref.digest === entry.ref.digest
      );
  }
}

/** True when the image is a valid reference that an entry admits. */
export function imageAllowed(image: string, allowlist: ImageAllowlist): boolean {
  const ref = parseImageRef(image);
  return ref !== undefined && allowlist.entries.some((e) => matches(e, ref));
}
