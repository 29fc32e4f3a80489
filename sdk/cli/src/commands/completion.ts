/**
 * `completion bash|zsh`: scripts that complete commands, flags and session names (from
 * `get -o name`, so the configured gateway answers). Install: `source <(sbx completion bash)`.
 */
import { UsageError } from '../errors.js';
import { write, type Context } from '../io.js';

/** What the scripts offer (kept in step with cli.ts by a unit test). */
export interface CompletionSpec {
  commands: string[];
  /** Commands whose positionals are session names. */
  sessionCommands: string[];
  globalFlags: string[];
}

export function bashScript(spec: CompletionSpec): string {
  return `# bash completion of sbx (sbx completion bash); also completes kubectl-sandbox.
_sbx() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      --url|--key|--namespace|-n|--output|-o|--config) ((i++)) ;;
      -*) ;;
      *) cmd="\${COMP_WORDS[i]}"; break ;;
    esac
  done
  case "$prev" in
    --output|-o) COMPREPLY=($(compgen -W "table json yaml name" -- "$cur")); return ;;
    --config) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [[ -z "$cmd" ]]; then
    COMPREPLY=($(compgen -W "${spec.commands.join(' ')} ${spec.globalFlags.join(' ')}" -- "$cur"))
    return
  fi
  case "$cmd" in
    ${spec.sessionCommands.join('|')})
      if [[ "$cur" != -* ]]; then
        COMPREPLY=($(compgen -W "$("\${COMP_WORDS[0]}" get -o name 2>/dev/null)" -- "$cur"))
      fi ;;
    cp) COMPREPLY=($(compgen -f -- "$cur")) ;;
    completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    config) COMPREPLY=($(compgen -W "view set path" -- "$cur")) ;;
  esac
}
complete -o default -F _sbx sbx kubectl-sandbox
`;
}

export function zshScript(spec: CompletionSpec): string {
  return `#compdef sbx kubectl-sandbox
# zsh completion of sbx (sbx completion zsh > "\${fpath[1]}/_sbx", or source <(sbx completion zsh)).
_sbx() {
  local -a commands
  commands=(${spec.commands.join(' ')})
  local cmd=\${words[2]}
  if (( CURRENT == 2 )); then
    compadd -a commands
    return
  fi
  case $cmd in
    ${spec.sessionCommands.join('|')})
      compadd -- \${(f)"$(\${words[1]} get -o name 2>/dev/null)"} ;;
    cp) _files ;;
    completion) compadd bash zsh ;;
    config) compadd view set path ;;
  esac
}
if (( $+functions[compdef] )); then compdef _sbx sbx kubectl-sandbox; fi
`;
}

export function completionCommand(spec: CompletionSpec): (ctx: Context) => Promise<number> {
  return async (ctx) => {
    const shell = ctx.args[0];
    if (shell === 'bash') await write(ctx.io.stdout, bashScript(spec));
    else if (shell === 'zsh') await write(ctx.io.stdout, zshScript(spec));
    else throw new UsageError(`completion needs a shell: ${ctx.io.prog} completion bash|zsh`);
    return 0;
  };
}
