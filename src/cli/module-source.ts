// A CLI run config may name its environment module by path: { "env": { "module": "envs/guess.mjs" } }. The
// path is read here, relative to the config file, into env.moduleSource before the config is validated, so
// the run config saved with every checkpoint holds the source itself and `marft train --resume` (or a
// checkpoint zip taken elsewhere) gets the same environment even if the file changed or is gone.

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from './args.ts';

/** Reads a module file, with a usage error naming the path when it cannot. */
export function readModuleFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read the environment module ${path}: ${(e as Error).message}`);
  }
}

/** `json` with env.moduleSource read from env.module (relative to `baseDir`) when only the path is given. */
export function withModuleSource(json: unknown, baseDir: string): unknown {
  const env = (json as { env?: Record<string, unknown> } | null)?.env;
  if (!env || typeof env !== 'object' || typeof env.module !== 'string' || env.moduleSource !== undefined) return json;
  return { ...(json as object), env: { ...env, moduleSource: readModuleFile(resolve(baseDir, env.module)) } };
}
