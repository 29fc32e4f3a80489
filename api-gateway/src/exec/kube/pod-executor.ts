/**
 * The pods/exec client: client-node's Exec on a KubeConfig of its own, never the REST client's.
 * Its WebSocketHandler gets private dummy streams: client-node applies a server's stream-close
 * frames to the handler's default streams, which are process.stdin/stdout/stderr (our log output).
 */
import { PassThrough } from 'node:stream';

import * as k8s from '@kubernetes/client-node';
import { WebSocketHandler } from '@kubernetes/client-node/dist/web-socket-handler.js';

import type { PodExecutor } from './kube-exec-transport.js';
import type { ExecSocket } from './pod-run.js';

/** A PodExecutor for a dedicated KubeConfig (load a fresh one for it; do not share). */
export function createPodExecutor(streamingConfig: k8s.KubeConfig): PodExecutor {
  const handler = new WebSocketHandler(streamingConfig, undefined, {
    stdin: new PassThrough(),
    stdout: new PassThrough(),
    stderr: new PassThrough(),
  });
  const exec = new k8s.Exec(streamingConfig, handler);
  return {
    async exec(c): Promise<ExecSocket> {
      const { namespace, podName, container, command, stdout, stderr, stdin, onStatus } = c;
      return exec.exec(namespace, podName, container, command, stdout, stderr, stdin, false, onStatus);
    },
  };
}
