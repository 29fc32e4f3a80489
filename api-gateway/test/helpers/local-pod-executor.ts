/**
 * A PodExecutor that runs the argv locally instead of in a pod, reporting the exit code on the
 * status channel exactly as pods/exec does (Success, or NonZeroExitCode with an ExitCode cause).
 * It exercises the KubernetesExec transport's real scripts, demultiplexing, caps and deadlines.
 */
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';

import type { ExecStatus } from '../../src/exec/kube/exec-status.js';
import type { PodExecCall, PodExecutor } from '../../src/exec/kube/kube-exec-transport.js';
import type { ExecSocket } from '../../src/exec/kube/pod-run.js';

/** The fake socket: close() ends it like a WebSocket close. */
class LocalSocket extends EventEmitter implements ExecSocket {
  closed = false;
  constructor(readonly protocol: string) {
    super();
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    setImmediate(() => this.emit('close'));
  }
}

/** Status of an exit code as the kubelet reports it. */
export function statusOf(code: number): ExecStatus {
  if (code === 0) return { status: 'Success' };
  return {
    status: 'Failure',
    reason: 'NonZeroExitCode',
    message: `command terminated with non-zero exit code: ${code}`,
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  };
}

/** Runs every call as a local process. */
export class LocalPodExecutor implements PodExecutor {
  readonly calls: PodExecCall[] = [];
  readonly sockets: LocalSocket[] = [];
  protocol = 'v5.channel.k8s.io';

  exec(call: PodExecCall): Promise<ExecSocket> {
    this.calls.push(call);
    const socket = new LocalSocket(this.protocol);
    this.sockets.push(socket);
    const child = spawn(call.command[0]!, call.command.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdout.on('data', (c: Buffer) => !socket.closed && call.stdout.write(c));
    child.stderr.on('data', (c: Buffer) => !socket.closed && call.stderr.write(c));
    if (call.stdin) call.stdin.pipe(child.stdin);
    else child.stdin.end();
    child.on('close', (code, signal) => {
      if (socket.closed) return;
      call.onStatus(statusOf(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15)));
      socket.close();
    });
    socket.on('close', () => child.kill('SIGKILL'));
    return Promise.resolve(socket);
  }
}
