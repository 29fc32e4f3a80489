/**
 * Turning the `<path>` of `/v1/files/<path>` into a safe relative path. Lexical checks only;
 * symlinks are checked against the real workspace by the file store.
 */
import { HttpProblem } from '../http/problem.js';

/**
 * Decodes and validates a URL path tail: refuses NUL, absolute paths and `..` segments (403),
 * drops empty and `.` segments. Returns the segments (empty for the workspace itself).
 */
export function parseWorkspacePath(rawTail: string): string[] {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawTail);
  } catch (err) {
    throw new HttpProblem('invalid-request', 'the path is not valid percent-encoding', { cause: err });
  }
  if (decoded.includes('\0')) throw new HttpProblem('path-forbidden', 'the path contains NUL');
  if (decoded.startsWith('/')) throw new HttpProblem('path-forbidden', 'absolute paths are not allowed');
  const segments = decoded.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) throw new HttpProblem('path-forbidden', '".." is not allowed in paths');
  return segments;
}

/** True when `child` (an absolute real path) is `root` or inside it. */
export function isWithin(root: string, child: string): boolean {
  if (child === root) return true;
  const prefix = root.endsWith('/') ? root : `${root}/`;
  return child.startsWith(prefix);
}
