// The critic's own trunk pass, for the two critics that cannot reuse the scoring forward's hidden states:
// critic.input 'episode' (AReaL's CTDE critic reads the whole episode so far, not only the acting agent's
// prompt) and critic.mode 'lora' (the seed's independent_critic=lora: a LoRA per agent on the base model,
// trained with the value head, so its hidden states change at every critic step).
// A critic "view" of an action is the action with the critic's prompt: its own prompt ('own'), or every
// earlier action of its episode (prompt and output, in acting order) followed by its own prompt
// ('episode'). The value is read, as in the legacy ActionCritic (marft/critics/action_level_critic.py:
// hidden_states[:, -1]), at the prompt's last token (action level), or before each generated token
// (token level): the same rows buildBatch gives the policy. Scoring runs this pass; the critic's step
// (critic-step.ts) runs it again with its gradients.

import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { ForwardState } from '../model/batch.ts';
import type { Decoder } from '../model/decoder.ts';
import { selectRows } from '../model/heads.ts';
import type { LoraSet } from '../model/lora-set.ts';
import type { RunConfig } from '../config/run-config.ts';
import { buildBatch } from './batch.ts';
import type { ActionRecord } from './rollout.ts';
import type { TrainState } from './state.ts';

/** Where the critic's hidden states come from when the scoring forward's cannot serve. */
export interface CriticTrunk {
  /** action -> the sequence the critic reads for it. */
  views: Map<ActionRecord, ActionRecord>;
  /** The critic LoRA (slot = agent), or null: the frozen base model. */
  adapters: LoraSet | null;
}

/** Whether the critic needs its own trunk pass (else it reads the scoring forward's hidden states). */
export const needsCriticTrunk = (config: RunConfig): boolean => config.critic.mode === 'lora' || config.critic.input === 'episode';

/**
 * The critic's view of each action. 'episode': the transcript of the action's episode so far (earlier
 * actions' prompt and output tokens, in acting order; `actions` must list each episode's actions in acting
 * order, as the rollout records them) before its own prompt; the transcript's oldest tokens are dropped to
 * keep the view within `maxLen` tokens.
 */
export function criticViews(
  actions: readonly ActionRecord[],
  input: RunConfig['critic']['input'],
  maxLen: number,
): Map<ActionRecord, ActionRecord> {
  const views = new Map<ActionRecord, ActionRecord>();
  const sofar = new Map<number, number[]>();
  for (const a of actions) {
    if (input === 'own') {
      views.set(a, a);
      continue;
    }
    const prefix = sofar.get(a.episode) ?? [];
    const room = Math.max(0, maxLen - a.promptIds.length - a.actionIds.length);
    views.set(a, { ...a, promptIds: [...prefix.slice(Math.max(0, prefix.length - room)), ...a.promptIds] });
    sofar.set(a.episode, [...prefix, ...a.promptIds, ...a.actionIds]);
  }
  return views;
}

export function criticTrunk(state: TrainState, actions: readonly ActionRecord[], maxLen: number): CriticTrunk {
  return { views: criticViews(actions, state.config.critic.input, maxLen), adapters: state.criticLora };
}

/** Critic rows of one action: one per generated token at token level, the prompt's last token at action level. */
export const criticRowCount = (a: ActionRecord, level: 'action' | 'token'): number => (level === 'token' ? a.actionIds.length : 1);

export interface CriticPass {
  fw: ForwardState;
  /** Flat rows of fw.hN the critic reads, action by action (chunk order). */
  rowIds: number[];
  /** (R, C) the hidden states at rowIds. */
  hRows: Tensor;
}

/** The trunk forward over the views of `chunk` (no logits), its hidden states gathered at the critic's rows. */
export function criticPass(
  gpu: Gpu,
  dec: Decoder,
  trunk: CriticTrunk,
  chunk: readonly ActionRecord[],
  level: 'action' | 'token',
  padId: number,
  save: boolean | 'checkpoint',
): CriticPass {
  const views = chunk.map((a) => trunk.views.get(a)!);
  const batch = buildBatch(views, (agent) => (trunk.adapters ? agent : -1), padId);
  const fw = dec.forward(
    { B: batch.B, T: batch.T, ids: batch.ids, mask: batch.mask, adapters: trunk.adapters, slots: batch.slots },
    { logits: 'none', save },
  );
  const rowIds: number[] = [];
  chunk.forEach((a, i) => {
    for (let k = 0; k < criticRowCount(a, level); k++) rowIds.push(batch.rows[i].start + k);
  });
  return { fw, rowIds, hRows: selectRows(gpu, fw.hN, rowIds, 'critic.hrows') };
}
