/**
 * Reading the master key. The operator and every gateway replica must derive identical tokens,
 * so they must read the key identically: this is the one function for it. The key is the file's
 * raw bytes, exactly (no trimming of a trailing newline: a key written with `echo` differs from one
 * written with `printf`, consistently everywhere). Never logged.
 */
import { readFileSync } from 'node:fs';

import { MIN_MASTER_KEY_BYTES } from './token.js';

/** Reads the master key file named by SANDBOX_MASTER_KEY_FILE; throws when unreadable or too short. */
export function readMasterKeyFile(path: string, read: (path: string) => Buffer = readFileSync): Buffer {
  let key: Buffer;
  try {
    key = read(path);
  } catch (err) {
    throw new Error(`cannot read the master key file ${path}`, { cause: err });
  }
  if (key.length < MIN_MASTER_KEY_BYTES) {
    throw new Error(
      `the master key in ${path} has ${key.length} bytes; at least ${MIN_MASTER_KEY_BYTES} are required`,
    );
  }
  return key;
}
