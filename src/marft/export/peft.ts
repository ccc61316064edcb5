// Adapter export: every agent's LoRA as a PEFT folder (agents/<role>/adapter_config.json and
// adapter_model.safetensors, loadable by Python's PeftModel.from_pretrained on the base model), the run
// config, and a README saying which is which. In shared LoRA mode every role's folder holds the same,
// shared adapter (the README and config.json lora.mode say so). Beside them the critic: its value heads
// (critic/value_head.safetensors, every critic mode) and, with critic.mode lora, each agent's critic LoRA
// as a PEFT folder critic/<role>/. Checkpoints reuse agentAdapterFiles and criticAdapterFiles.

import type { Gpu } from '../../gpu/gpu.ts';
import type { TensorReader } from '../../gpu/prefetch.ts';
import { getLoraSlot } from '../../model/lora-set.ts';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, writePeftAdapter } from '../../model/peft.ts';
import { agentSlots, type TrainState } from '../state.ts';
import { VALUE_HEAD_FILE, encodeValueHead } from '../checkpoint/format.ts';

export interface ExportOptions {
  /** base_model_name_or_path in adapter_config.json: the HF id or folder the adapters apply to. */
  baseModel: string;
}

export const agentDir = (role: string): string => `agents/${role}`;

/** role -> its adapter slot: agent i in per-agent mode, 0 for every role in shared mode. */
export function agentSlotMap(state: TrainState): Record<string, number> {
  const shared = state.config.lora.mode === 'shared';
  return Object.fromEntries(state.config.graph.agents.map((a, i) => [a.role, shared ? 0 : i]));
}

/** The PEFT files of every agent, keyed agents/<role>/<file>. */
export async function agentAdapterFiles(
  gpu: TensorReader,
  state: TrainState,
  baseModel: string,
): Promise<Record<string, Uint8Array | string>> {
  const slots = agentSlots(state.config);
  if (slots !== state.policy.spec.slots)
    throw new Error(
      `the policy has ${state.policy.spec.slots} adapter slots, config.json lora.mode "${state.config.lora.mode}" needs ${slots}`,
    );
  const bySlot = new Map<number, ReturnType<typeof writePeftAdapter>>();
  const out: Record<string, Uint8Array | string> = {};
  for (const [role, slot] of Object.entries(agentSlotMap(state))) {
    let files = bySlot.get(slot);
    if (!files) {
      files = writePeftAdapter(await getLoraSlot(gpu, state.policy, slot, baseModel));
      bySlot.set(slot, files);
    }
    out[`${agentDir(role)}/${ADAPTER_CONFIG_FILE}`] = files[ADAPTER_CONFIG_FILE];
    out[`${agentDir(role)}/${ADAPTER_WEIGHTS_FILE}`] = files[ADAPTER_WEIGHTS_FILE];
  }
  return out;
}

export const criticDir = (role: string): string => `critic/${role}`;

/** critic.mode lora: each agent's critic LoRA (slot = agent) as PEFT files keyed critic/<role>/<file>; else none. */
export async function criticAdapterFiles(
  gpu: TensorReader,
  state: TrainState,
  baseModel: string,
): Promise<Record<string, Uint8Array | string>> {
  const out: Record<string, Uint8Array | string> = {};
  if (!state.criticLora) return out;
  for (const [slot, { role }] of state.config.graph.agents.entries()) {
    const files = writePeftAdapter(await getLoraSlot(gpu, state.criticLora, slot, baseModel));
    out[`${criticDir(role)}/${ADAPTER_CONFIG_FILE}`] = files[ADAPTER_CONFIG_FILE];
    out[`${criticDir(role)}/${ADAPTER_WEIGHTS_FILE}`] = files[ADAPTER_WEIGHTS_FILE];
  }
  return out;
}

function readme(state: TrainState, baseModel: string): string {
  const { config } = state;
  const roles = config.graph.agents.map((a) => a.role);
  const shared = config.lora.mode === 'shared';
  return [
    `# MARFT Lab adapters (iteration ${state.iteration})`,
    '',
    `Base model: ${baseModel}`,
    `LoRA: r ${config.lora.r}, alpha ${config.lora.alpha}, targets ${config.lora.targets.join(', ')}; ${
      shared
        ? `shared mode: all agents use one adapter, copied into each of agents/{${roles.join(',')}}.`
        : 'per-agent mode: one adapter per agent.'
    }`,
    '',
    ...roles.map((r) => `- agents/${r}/ — the ${r} agent${shared ? ' (the shared adapter)' : ''}`),
    '',
    'Load one with PEFT:',
    '',
    '```python',
    'from transformers import AutoModelForCausalLM',
    'from peft import PeftModel',
    `base = AutoModelForCausalLM.from_pretrained(${JSON.stringify(baseModel)})`,
    `model = PeftModel.from_pretrained(base, "agents/${roles[0]}")`,
    '```',
    '',
    `The critic (mode ${config.critic.mode}, input ${config.critic.input}): ${VALUE_HEAD_FILE} holds its value heads` +
      ` (heads.{s}.layers.{j}.weight / .bias, MLP ${[...config.critic.hidden, 1].join(' -> ')} with ReLU on the final hidden state${config.critic.mode === 'shared' ? '' : ', head s = agent s'})` +
      (state.criticLora
        ? `, and critic/{${roles.join(',')}}/ each agent's critic LoRA (PEFT, same base model; the value is read at the prompt's last token).`
        : '.'),
    '',
    "config.json is the lab's run config (agent graph, prompts, hyperparameters).",
    '',
  ].join('\n');
}

/** Per-agent PEFT folders, the critic (value heads, critic LoRA folders), config.json (the run config) and README.md, keyed by relative path. */
export async function exportAdapters(gpu: Gpu, state: TrainState, opts: ExportOptions): Promise<Record<string, Uint8Array | string>> {
  return {
    'config.json': JSON.stringify(state.config, null, 2) + '\n',
    'README.md': readme(state, opts.baseModel),
    ...(await agentAdapterFiles(gpu, state, opts.baseModel)),
    [VALUE_HEAD_FILE]: await encodeValueHead(gpu, state.critic),
    ...(await criticAdapterFiles(gpu, state, opts.baseModel)),
  };
}
