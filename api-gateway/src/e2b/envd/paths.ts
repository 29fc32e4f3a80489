/**
 * E2B paths to workspace paths. E2B resolves a relative path against the user's home; here the
 * home is the workspace (`/workspace`, HOME in the sandbox image), so `notes.txt` and
 * `/workspace/notes.txt` are the same file. Absolute paths elsewhere are refused (400): the
 * gateway's file calls go through the agent, which confines files to the workspace, and the other
 * filesystem calls keep to the same rule so that every call sees the same tree (docs/e2b.md).
 */
import { posix } from 'node:path';

import { WORKSPACE_DIR } from '@sandbox-platform/api';

import { ProblemError } from '../../errors.js';

/** The sandbox workspace (the agent's root for files, HOME of the sandbox user). */
export const WORKSPACE = WORKSPACE_DIR;

/** A path in the workspace, absolute (for commands) and relative to the workspace (for the agent). */
export interface WorkspacePath {
  absolute: string;
  /** '' for the workspace itself. */
  relative: string;
}

/**
 * Resolves an E2B path; 400 for NUL bytes and for paths outside the workspace. `root` is the
 * workspace's path in the sandbox (only tests, whose agents run in a temporary directory, change it).
 */
export function workspacePath(path: string, root: string = WORKSPACE): WorkspacePath {
  if (path.includes('\0')) throw new ProblemError('invalid-request', 'the path contains a NUL byte');
  if (path.length > 4096)
    throw new ProblemError('invalid-request', 'the path is longer than 4096 characters');
  const absolute = posix.normalize(path.startsWith('/') ? path : `${root}/${path}`).replace(/\/+$/, '');
  if (absolute === root) return { absolute, relative: '' };
  if (!absolute.startsWith(`${root}/`)) {
    throw new ProblemError(
      'path-forbidden',
      `path ${JSON.stringify(path.slice(0, 256))} is outside the workspace ${root}; paths are relative to it or under it`,
    );
  }
  return { absolute, relative: absolute.slice(root.length + 1) };
}

/** A path that must name something in the workspace, not the workspace itself. */
export function workspaceEntry(path: string, root: string = WORKSPACE): WorkspacePath {
  const p = workspacePath(path, root);
  if (p.relative === '') {
    throw new ProblemError('invalid-request', `path ${JSON.stringify(path)} is the workspace itself`);
  }
  return p;
}
