/**
 * File paths are relative to the sandbox workspace. The gateway refuses the obvious escapes itself
 * (absolute paths, `..` segments, NUL) before any call; the agent (and the KubernetesExec script)
 * check again after resolving symlinks, which only the sandbox can do.
 */
import { ProblemError } from '../../errors.js';

/** Validates a workspace-relative path and returns it normalized (no empty or `.` segments). */
export function checkWorkspacePath(path: string): string {
  if (path.includes('\0')) throw new ProblemError('invalid-request', 'the path contains a NUL byte');
  if (path.startsWith('/')) throw new ProblemError('path-forbidden', 'paths are relative to the workspace');
  const segments = path.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.some((s) => s === '..'))
    throw new ProblemError('path-forbidden', 'the path leaves the workspace');
  if (segments.length === 0) throw new ProblemError('invalid-request', 'the path names no file');
  return segments.join('/');
}
