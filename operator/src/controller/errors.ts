/** Errors the controller raises itself, each mapped to its own Ready reason. */

/**
 * A Pod, Secret or workspace PersistentVolumeClaim with the session's deterministic name exists and is not owned by this session.
 * The operator never adopts or deletes it; the session reports Ready=False/NameConflict until the
 * object goes away. The message names only the kind and name, which are not secret.
 */
export class NameConflictError extends Error {
  override readonly name = 'NameConflictError';

  constructor(
    readonly kind: 'Pod' | 'Secret' | 'PersistentVolumeClaim',
    readonly objectName: string,
  ) {
    super(`${kind} ${objectName} exists and is not owned by this SandboxSession; it is left alone`);
  }
}

/** True for NameConflictError. */
export function isNameConflict(err: unknown): err is NameConflictError {
  return err instanceof NameConflictError;
}
