/**
 * The exit status pods/exec reports on its status channel (a metav1.Status): Success means exit 0;
 * NonZeroExitCode carries the code in details.causes[reason=ExitCode].message. Anything else is a
 * failure of the exec itself (container gone, shell missing), not of the command.
 */
import { ProblemError } from '../../errors.js';

/** The parts of V1Status this module reads. */
export interface ExecStatus {
  status?: string;
  reason?: string;
  message?: string;
  details?: { causes?: Array<{ reason?: string; message?: string }> };
}

/** The command's exit code, or throws upstream-error when the exec itself failed. */
export function exitCodeOf(status: ExecStatus): number {
  if (status.status === 'Success') return 0;
  if (status.reason === 'NonZeroExitCode') {
    const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
    const code = Number(cause?.message);
    if (Number.isInteger(code)) return code;
  }
  throw new ProblemError(
    'upstream-error',
    `pods/exec failed: ${status.message ?? status.reason ?? 'unknown status'}`,
  );
}
