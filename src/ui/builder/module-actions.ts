// The Build tab's actions for a user's environment module: load it from a file or start from the template
// (the source goes into the draft's env.moduleSource, so it is kept with the run and its checkpoints), and
// try it in the engine worker's sandbox on a few seeds with a typed answer.

import { MODULE_TEMPLATE, type ModuleReport } from '../../worker/api.ts';
import { getEngine } from '../../worker/client.ts';
import type { WorkerError } from '../../worker/api.ts';
import { editDraft, useLab } from '../store.ts';

/** The select's value for "your own module". */
export const MODULE_ENV = 'module';

export function setModuleSource(source: string, name?: string): void {
  editDraft((d) => {
    d.env = {
      name: d.env.moduleSource !== undefined ? d.env.name : MODULE_ENV,
      options: d.env.moduleSource !== undefined ? d.env.options : {},
      moduleSource: source,
      ...(name ? { module: name } : d.env.module ? { module: d.env.module } : {}),
    };
  });
}

export function startFromTemplate(): void {
  editDraft((d) => {
    d.env = { name: MODULE_ENV, options: {}, moduleSource: MODULE_TEMPLATE, module: 'my-env.mjs' };
  });
}

export async function loadModuleFile(file: File): Promise<void> {
  setModuleSource(await file.text(), file.name);
}

/** Parses "0, 1, 2" into seeds; null when it is not a list of non-negative integers. */
export function parseSeeds(text: string): number[] | null {
  const seeds = text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number);
  return seeds.length && seeds.length <= 16 && seeds.every((s) => Number.isInteger(s) && s >= 0) ? seeds : null;
}

export type TryOutcome = { ok: true; report: ModuleReport } | { ok: false; error: WorkerError };

/** Resets the draft's module on `seeds` and steps it once with `answer` for every agent, as a run of the draft would. */
export async function tryDraftModule(seeds: number[], answer: string): Promise<TryOutcome> {
  const { env, graph, rollout } = useLab.getState().draft;
  const roles = graph.agents.map((a) => a.role);
  const r = await getEngine()
    .tryEnvModule({
      // the options a run would give it: the env's own, and the rollout's horizon
      source: env.moduleSource ?? '',
      name: env.module ?? env.name,
      options: { ...env.options, horizon: rollout.horizon },
      seeds,
      roles,
      answer,
    })
    .catch((e: unknown) => ({ ok: false as const, error: { code: 'WORKER', message: e instanceof Error ? e.message : String(e) } }));
  return r.ok ? { ok: true, report: r.value } : { ok: false, error: r.error };
}
