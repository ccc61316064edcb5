// Starting a lab run from adapters made elsewhere (a PEFT folder trained with Python, an AReaL run, another
// lab run): each `ROLE=DIR` loads that adapter into the agent's LoRA slot of a fresh TrainState before the
// first iteration. The adapter's rank, alpha, targets (and no rslora / layers_to_transform) must equal the
// run config's lora settings, so the optimiser, the checkpoint and the export see the same adapter layout.
// In shared LoRA mode every role maps to the one shared slot: give one ROLE=DIR only.

import type { Gpu } from '../../gpu/gpu.ts';
import type { ModelConfig } from '../../model/config.ts';
import type { ModelFiles } from '../../model/folder.ts';
import { loadAdapterFiles } from '../../model/load.ts';
import { setLoraSlot } from '../../model/lora-set.ts';
import { type PeftAdapter, loraScale } from '../../model/peft.ts';
import { ConfigError } from '../../config/errors.ts';
import { agentSlotMap } from '../export/peft.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { type TrainState, createTrainState, releaseTrainState } from '../state.ts';

const HINT =
  "Initial adapters must match the run config's lora settings (r, alpha, targets): change config.lora, or re-train/convert the adapter.";

/** Parses "ROLE=DIR" arguments into [role, dir] pairs, refusing a role given twice. */
export function parseInitAdapters(specs: readonly string[]): Array<{ role: string; dir: string }> {
  const seen = new Set<string>();
  return specs.map((s) => {
    const i = s.indexOf('=');
    if (i <= 0 || i === s.length - 1) throw new ConfigError('CONFIG_INVALID', `--init-adapter must be ROLE=DIR, got "${s}"`, HINT);
    const role = s.slice(0, i);
    if (seen.has(role)) throw new ConfigError('CONFIG_INVALID', `--init-adapter gives role "${role}" twice`, HINT);
    seen.add(role);
    return { role, dir: s.slice(i + 1) };
  });
}

/** Checks `adapter` against the run's LoRA settings and writes it into `role`'s slot. `where` names it in errors. */
export function initAgentAdapter(gpu: Gpu, state: TrainState, model: ModelConfig, role: string, adapter: PeftAdapter, where: string): void {
  const { config } = state;
  const roles = config.graph.agents.map((a) => a.role);
  if (!roles.includes(role))
    throw new ConfigError('CONFIG_INVALID', `initial adapter ${where}: "${role}" is not a role of the graph (${roles.join(', ')})`, HINT);
  const c = adapter.config;
  const lora = config.lora;
  const targets = [...c.targetModules].sort().join(', ');
  const want = [...lora.targets].sort().join(', ');
  const problems: string[] = [];
  if (c.r !== lora.r) problems.push(`r ${c.r} (run: ${lora.r})`);
  if (c.loraAlpha !== lora.alpha) problems.push(`lora_alpha ${c.loraAlpha} (run: ${lora.alpha})`);
  if (targets !== want) problems.push(`target_modules [${targets}] (run: [${want}])`);
  if (c.useRslora) problems.push('use_rslora true (the lab uses alpha / r)');
  if (c.layersToTransform) problems.push(`layers_to_transform [${c.layersToTransform.join(', ')}] (the lab adapts every layer)`);
  if (adapter.layers.length !== model.numLayers) problems.push(`${adapter.layers.length} layers (the base model has ${model.numLayers})`);
  if (problems.length)
    throw new ConfigError('CONFIG_INVALID', `initial adapter ${where} for "${role}" does not fit the run: ${problems.join('; ')}`, HINT);
  if (loraScale(c) !== state.policy.scale)
    throw new ConfigError(
      'CONFIG_INVALID',
      `initial adapter ${where}: scale ${loraScale(c)} differs from the run's ${state.policy.scale}`,
      HINT,
    );
  setLoraSlot(gpu, state.policy, agentSlotMap(state)[role], adapter);
}

/** Loads every (role, adapter) pair; in shared mode only one is allowed (all roles share the slot). */
export function initAgentAdapters(
  gpu: Gpu,
  state: TrainState,
  model: ModelConfig,
  adapters: Array<{ role: string; adapter: PeftAdapter; where: string }>,
): void {
  if (state.config.lora.mode === 'shared' && adapters.length > 1) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `lora.mode is "shared": every role uses one adapter, but ${adapters.length} initial adapters were given (${adapters.map((a) => a.role).join(', ')})`,
      HINT,
    );
  }
  for (const a of adapters) initAgentAdapter(gpu, state, model, a.role, a.adapter, a.where);
}

/**
 * A new run's train state: fresh adapters and critic from the config's seed, then the adapters given (PEFT
 * folders' files, one per role) in their agents' slots. Nothing stays allocated when an adapter is refused.
 */
export async function newRunState(
  m: { gpu: Gpu; model: ModelConfig },
  config: RunConfig,
  adapters: ReadonlyArray<{ role: string; files: ModelFiles; where: string }>,
): Promise<TrainState> {
  const state = createTrainState(m.gpu, m.model, config);
  try {
    const loaded = [];
    for (const { role, files, where } of adapters) loaded.push({ role, adapter: await loadAdapterFiles(files, m.model), where });
    if (loaded.length) initAgentAdapters(m.gpu, state, m.model, loaded);
    return state;
  } catch (e) {
    releaseTrainState(m.gpu, state);
    throw e;
  }
}
