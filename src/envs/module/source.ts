// An environment module's source turned into the body of an async function the sandbox runs: a module is
// one self-contained ES module (no imports: nothing to fetch, and nothing but its own text to keep with a
// run), whose `export default` is the factory. The rewrite keeps every line where it was, so a syntax
// error the sandbox reports points at the user's line. Checked here without running anything (the lab's
// editor calls it on every edit); real parsing happens in the sandbox.

import { envFail } from '../errors.ts';

/** The module template (README.md shows the same): a factory (options) => env. */
export const MODULE_TEMPLATE = `// A MARFT Lab environment module: one self-contained ES module (no imports).
// Runs sandboxed (no network, DOM or file system). All randomness must come from the seed.

export default function createEnv(options = {}) {
  const horizon = options.horizon ?? 1;
  let target = 0;
  return {
    name: 'my-task',
    horizon,
    // reset(seed) -> { observation: { task }, info }; may be async
    reset(seed) {
      target = seed % 10;
      return { observation: { task: \`Say the number \${target} as \\\\boxed{N}.\` }, info: { target } };
    },
    // step({ role: text }, { answerRoles }) -> { teamReward, done, feedback, ...optional fields }; may be async
    step(actions, { answerRoles } = {}) {
      const roles = answerRoles?.length ? answerRoles : Object.keys(actions);
      const text = actions[roles[roles.length - 1]] ?? '';
      const m = /\\\\boxed\\{([^}]*)\\}/.exec(text);
      const correct = m !== null && Number(m[1]) === target;
      return { teamReward: correct ? 1 : 0, done: true, feedback: correct ? 'correct' : 'wrong', correct };
    },
  };
}
`;

/** Names that the wrapper itself declares; a module must not use them. */
export const WRAPPER_MODULE = '__marft_module';

export interface PreparedModule {
  /** The module as statements of an async function body that sets __marft_module.default. */
  body: string;
}

const IMPORT = /^\s*import\s*(?:[\w*{$]|['"])/;
const DYNAMIC_IMPORT = /\bimport\s*\(/;
const EXPORT_DEFAULT = /^(\s*)export\s+default\s+/;
const EXPORT_DECL = /^(\s*)export\s+(?=(?:async\s+)?function\b|const\b|let\b|var\b|class\b)/;
const EXPORT_LIST = /^\s*export\s*\{([^}]*)\}\s*;?\s*$/;

/**
 * Rewrites `export default X` to `__marft_module.default = X`, drops `export` from declarations, reads
 * `export { f as default }`, and refuses imports (ENV_MODULE_SYNTAX with the line). `name` names the module in errors.
 */
export function prepareModule(source: string, name: string): PreparedModule {
  if (typeof source !== 'string' || !source.trim()) envFail('ENV_MODULE_SYNTAX', `environment module "${name}": the source is empty`);
  let defaults = 0;
  const lines = source.split('\n').map((line, i) => {
    const at = `environment module "${name}", line ${i + 1}`;
    if (IMPORT.test(line)) envFail('ENV_MODULE_SYNTAX', `${at}: imports are not allowed (a module is one self-contained file)`);
    if (DYNAMIC_IMPORT.test(line))
      envFail('ENV_MODULE_SYNTAX', `${at}: import() is not allowed, not even in a comment or a string (the sandbox loads nothing)`);
    if (line.includes(WRAPPER_MODULE)) envFail('ENV_MODULE_SYNTAX', `${at}: the name ${WRAPPER_MODULE} is reserved`);
    if (EXPORT_DEFAULT.test(line)) {
      defaults++;
      return line.replace(EXPORT_DEFAULT, `$1${WRAPPER_MODULE}.default = `);
    }
    const list = EXPORT_LIST.exec(line);
    if (list) {
      const def = list[1]
        .split(',')
        .map((x) => x.trim().split(/\s+as\s+/))
        .find((p) => p[1] === 'default');
      if (def) defaults++;
      return def ? `${WRAPPER_MODULE}.default = ${def[0]};` : '';
    }
    return line.replace(EXPORT_DECL, '$1');
  });
  if (defaults === 0)
    envFail(
      'ENV_MODULE_SYNTAX',
      `environment module "${name}": no \`export default\` at the start of a line (the default export must be the factory (options) => env)`,
    );
  if (defaults > 1) envFail('ENV_MODULE_SYNTAX', `environment module "${name}": more than one default export`);
  return { body: lines.join('\n') };
}

/** The module's label in messages: a file name, or its env name. */
export function moduleLabel(path: string | undefined, fallback = 'module'): string {
  return path ? path.split(/[\\/]/).pop() || fallback : fallback;
}
