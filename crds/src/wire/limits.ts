/**
 * Fixed bounds of the agent's wire contract: both ends need them (the agent enforces them, the
 * gateway and the SDKs describe them and may check them before sending), so they live next to the
 * schemas that use them. Bounds an operator may tune per deployment are agent configuration
 * instead (sandbox-agent/src/config.ts), e.g. the output cap and the number of processes.
 */

/** Deadline of an exec call when the request names none. */
export const DEFAULT_TIMEOUT_SECONDS = 60;
/** Longest deadline an exec call may ask for. */
export const MAX_TIMEOUT_SECONDS = 300;

/** Longest `cwd` accepted (bytes bash may hold in PWD are not bounded, but a request is). */
export const MAX_CWD_LENGTH = 4096;

/** Most variables in a per-call `env`. */
export const MAX_ENV_ENTRIES = 256;

/** A variable name bash accepts in an assignment; validated before a name reaches the shell. */
export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';

/** Strings that end up in bash (commands, directories, values) cannot hold NUL. */
export const NO_NUL_PATTERN = '^[^\\u0000]*$';

/**
 * Signals a client may send to a background process. Everything a person does to a job from a
 * terminal (interrupt, hang up, stop and continue, terminate, kill) and the two user signals;
 * signals whose default action dumps core or that only make sense from the kernel (SIGSEGV,
 * SIGBUS, SIGPIPE...) are refused, so a typo cannot turn into a core file or a hang.
 */
export const PROCESS_SIGNALS = [
  'SIGHUP',
  'SIGINT',
  'SIGQUIT',
  'SIGKILL',
  'SIGTERM',
  'SIGUSR1',
  'SIGUSR2',
  'SIGSTOP',
  'SIGCONT',
] as const;

/** A signal name of {@link PROCESS_SIGNALS}. */
export type ProcessSignal = (typeof PROCESS_SIGNALS)[number];

/** Shape of a background process id: 12 lowercase hex digits, random (ids are never reused). */
export const PROCESS_ID_PATTERN = '^[0-9a-f]{12}$';

/** Longest wait a `wait` call may ask for. */
export const MAX_WAIT_SECONDS = 300;
/** Wait of a `wait` call that names none. */
export const DEFAULT_WAIT_SECONDS = 30;

/** Largest terminal dimension (columns or rows) accepted; the kernel stores them as 16 bits. */
export const MAX_PTY_DIMENSION = 1000;
/** Terminal size when the client names none. */
export const DEFAULT_PTY_SIZE = { cols: 80, rows: 24 } as const;

/**
 * Largest WebSocket message a PTY client may send (terminal input or a control message); a paste
 * larger than this must be split by the client. Bounds what the agent buffers per message.
 */
export const PTY_MAX_MESSAGE_BYTES = 64 * 1024;

/**
 * Largest NDJSON line of a streamed exec request body (the first line, the request, is also
 * bounded by the agent's exec body limit). A stdin chunk of 512 KiB in base64 fits.
 */
export const STDIN_LINE_MAX_BYTES = 1024 * 1024;

/** Most bytes one read of a background process's output returns per stream. */
export const MAX_READ_BYTES = 1024 * 1024;
