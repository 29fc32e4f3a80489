/**
 * E2B template IDs in session terms. A template is, in this order:
 * - a SandboxPool of that name in the sandbox's namespace (a warm Pod of the pool: ADR 0016);
 * - `base` (the SDKs' default): the operator's default image (and the namespace's default pool);
 * - an image reference (it holds `/`, `:` or `@`): that image, if the platform's admission policy
 *   allows it (refused: 403 from the API server, answered as E2B's 400);
 * - anything else: 404 "template not found" (a name that names no pool).
 */
import { isDnsLabel } from '@sandbox-platform/api';

import { ProblemError } from '../../errors.js';

/** The SDKs' default template. */
export const DEFAULT_TEMPLATE = 'base';

/** What a template becomes. */
export type TemplateChoice =
  { kind: 'default' } | { kind: 'pool'; name: string } | { kind: 'image'; image: string };

/** Whether a pool of that name exists in a namespace. */
export interface PoolLookup {
  poolExists(namespace: string, name: string): Promise<boolean>;
}

const IMAGE_REF = /^[A-Za-z0-9][A-Za-z0-9._\-/:@+]*$/;

/** Resolves a template ID for a namespace. */
export async function resolveTemplate(
  templateId: string,
  namespace: string,
  pools: PoolLookup,
): Promise<TemplateChoice> {
  if (isDnsLabel(templateId)) {
    if (await pools.poolExists(namespace, templateId)) return { kind: 'pool', name: templateId };
    if (templateId === DEFAULT_TEMPLATE) return { kind: 'default' };
    throw templateNotFound(templateId);
  }
  if (templateId.length <= 512 && IMAGE_REF.test(templateId) && /[/:@]/.test(templateId)) {
    return { kind: 'image', image: templateId };
  }
  throw templateNotFound(templateId);
}

function templateNotFound(templateId: string): ProblemError {
  return new ProblemError(
    'not-found',
    `template ${JSON.stringify(templateId.slice(0, 128))} not found: name a SandboxPool of your namespace, "base", or an image reference`,
  );
}

/** The template ID a session was made from (its pool, its image, or base). */
export function templateOf(spec: { poolRef?: { name?: string }; image?: string }): string {
  return spec.poolRef?.name ?? spec.image ?? DEFAULT_TEMPLATE;
}
