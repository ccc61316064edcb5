// The engine's door to users' environment modules (src/envs/module/) for the front-ends above it: the
// worker may not import src/envs, so it tries a module through here, in its session's Envs (the
// sandbox of its platform).

import { type ModuleReport, checkModule } from '../envs/module/check.ts';
import { MODULE_TEMPLATE } from '../envs/module/source.ts';
import type { Envs } from '../envs/registry.ts';

export type { ModuleReport };
export { MODULE_TEMPLATE };

export interface ModuleTry {
  source: string;
  /** Its label in messages (the file name). */
  name: string;
  options: Record<string, unknown>;
  seeds: number[];
  /** Acting roles; each step gives every one of them `answer`. */
  roles: string[];
  answer: string;
}

/** Reset on each seed and one step with `answer` (replayed for determinism), in `envs`' sandbox: the lab's "try it". */
export function tryModule(envs: Envs, t: ModuleTry): Promise<ModuleReport> {
  return checkModule(
    envs.modules,
    { source: t.source, name: t.name },
    { seeds: t.seeds, roles: t.roles, texts: [t.answer], options: t.options, maxTurns: 1 },
  );
}
