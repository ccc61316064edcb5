// The AReaL export (CPU only): the YAML parses back with the yaml package and carries every run-config
// field, in the MARFT examples' layout; adapters sit alongside (per agent, or one shared folder).

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writePeftAdapter } from '../../model/peft.ts';
import { AREAL_CONFIG_FILE, AREAL_LAB_CONFIG_FILE, AREAL_TOP_K_OFF, arealExportFiles } from './areal.ts';
import { type RunConfig, parseRunConfig } from '../../config/run-config.ts';

function adapterFiles(config: RunConfig, seed: number): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  config.graph.agents.forEach((a, i) => {
    const f = writePeftAdapter({
      config: { r: 2, loraAlpha: 4, targetModules: ['q_proj'], loraDropout: 0, useRslora: false, baseModelNameOrPath: 'base', layersToTransform: null },
      layers: [{ q_proj: { A: Float32Array.of(seed, i, 1, 2), B: Float32Array.of(i, seed, 3, 4) } }],
    });
    out[`agents/${a.role}/adapter_config.json`] = new TextEncoder().encode(f['adapter_config.json']);
    out[`agents/${a.role}/adapter_model.safetensors`] = f['adapter_model.safetensors'];
  });
  return out;
}

describe('AReaL export', () => {
  it('per-agent LoRA, PPO: every field maps, adapters per role', () => {
    const config = parseRunConfig({
      seed: 11, iterations: 40,
      graph: {
        agents: [
          { role: 'planner', systemPrompt: 'Plan "it": no maths.', maxNewTokens: 64, temperature: 0.7, topK: 20, topP: 0.9, description: 'plans' },
          { role: 'solver', systemPrompt: 'Solve.\nUse \\boxed{}.', withAnswer: true, maxNewTokens: 128, temperature: 0.7, topK: 20, topP: 0.9 },
        ],
        edges: [{ from: 'planner', to: 'solver' }],
      },
      level: 'token', credit: { method: 'per_step', discount: 0.9, perStep: { planner: 'planner', solver: 'solver' }, fallback: null },
      lora: { r: 32, alpha: 16, targets: ['q_proj', 'v_proj', 'o_proj'], mode: 'per_agent' },
      critic: { mode: 'per_agent', hidden: [64, 32] },
      schedule: { mode: 'agent_by_agent', interval: 2, criticWarmup: 3 },
      ppo: { clip: 0.25, valueClip: 0.3, entropyCoef: 0.02, klCoef: 0.1, klEstimator: 'k3', targetKl: 0.01, epochs: 2, minibatches: 4, gamma: 1, lambda: 0.97, maxGradNorm: 1, lr: 3e-5, criticLr: 1e-4, adamEps: 1e-8, weightDecay: 0.01 },
      rollout: { episodes: 8, horizon: 2 },
    });
    const files = arealExportFiles(config, adapterFiles(config, 7), { baseModel: '/models/Qwen2.5-3B', trialName: 'iter12', source: { checkpoint: '/runs/a', iteration: 12 } });
    const y = parse(files[AREAL_CONFIG_FILE] as string);
    expect(y.n_agents).toBe(2);
    expect(y.agent_interaction_mode).toBe('sequential');
    expect(y.share_critic).toBe(false);
    expect(y.seed).toBe(11);
    expect(y.total_train_steps).toBe(40);
    expect(y.trial_name).toBe('iter12');
    expect(y.agent_profiles).toEqual(config.graph.agents.map((a, i) => ({
      agent_id: i, agent_name: a.role, system_prompt: a.systemPrompt, with_answer: a.withAnswer,
      ...(a.description ? { description: a.description } : {}),
      depends_on: i === 0 ? [] : ['planner'], lora_path: `adapters/${a.role}`,
      max_new_tokens: a.maxNewTokens, temperature: 0.7, top_k: 20, top_p: 0.9,
    })));
    expect(y.gconfig).toEqual({ n_samples: 1, min_new_tokens: 0, max_new_tokens: 128, greedy: false, temperature: 0.7, top_k: 20, top_p: 0.9 });
    expect(y.actor).toMatchObject({
      path: '/models/Qwen2.5-3B', eps_clip: 0.25, kl_ctl: 0.1, kl_estimator: 'k3', discount: 1, gae_lambda: 0.97, ppo_n_minibatches: 4,
      use_lora: true, peft_type: 'lora', lora_rank: 32, lora_alpha: 16, target_modules: ['q_proj', 'v_proj', 'o_proj'],
      optimizer: { type: 'adam', lr: 3e-5, weight_decay: 0.01, eps: 1e-8, gradient_clipping: 1 },
      adv_norm: { mean_level: 'batch', std_level: 'batch' },
    });
    expect(y.critic).toMatchObject({ is_critic: true, eps_clip: 0.3, optimizer: { lr: 1e-4 } });
    expect(y.ref.path).toBe('${actor.path}');
    expect(y.marft).toEqual({
      level: 'token', algo: 'ppo',
      lora: { mode: 'per_agent', share_lora: false, dropout: 0, init_adapters: { planner: 'adapters/planner', solver: 'adapters/solver' } },
      credit_assignment: { method: 'per_step', discount: 0.9, reward_sharing: false, per_step: { planner: 'planner', solver: 'solver' }, fallback: null },
      critic: { mode: 'per_agent', input: 'own', hidden: [64, 32], value_loss: 'huber', huber_delta: 10, value_clip: 0.3 },
      graph: { edges: [{ from: 'planner', to: 'solver' }], dynamic: null },
      schedule: { mode: 'agent_by_agent', interval: 2, critic_warmup: 3 },
      ppo: { entropy_coef: 0.02, target_kl: 0.01, epochs: 2, log_prob_norm: 'sum', group_std: 'sample', advantage_norm: true },
      rollout: { episodes: 8, group_size: 1, horizon: 2 },
      env: { name: config.env.name, options: config.env.options },
      model_path: '',
      source: { checkpoint: '/runs/a', iteration: 12 },
    });
    expect(JSON.parse(files[AREAL_LAB_CONFIG_FILE] as string)).toEqual(config);
    for (const r of ['planner', 'solver']) {
      expect(files[`adapters/${r}/adapter_config.json`]).toBeInstanceOf(Uint8Array);
      expect(files[`adapters/${r}/adapter_model.safetensors`]).toBeInstanceOf(Uint8Array);
    }
    expect(files['README.md']).toContain('adapters/planner/');
  });

  it('shared LoRA, GRPO, greedy: one adapter folder, no critic, group settings', () => {
    const config = parseRunConfig({
      algo: 'grpo', rollout: { groupSize: 4 }, lora: { mode: 'shared' }, credit: { method: 'step_discount', discount: 0.5 },
      graph: { agents: [{ role: 'a', systemPrompt: 'x', temperature: 0 }, { role: 'b', systemPrompt: 'y', withAnswer: true, temperature: 0 }], edges: [] },
    });
    const files = arealExportFiles(config, adapterFiles(config, 1), { baseModel: 'Qwen/Qwen2.5-0.5B' });
    const y = parse(files[AREAL_CONFIG_FILE] as string);
    expect(y.agent_interaction_mode).toBe('parallel');
    expect(y.critic).toBeUndefined();
    expect(y.gconfig).toMatchObject({ n_samples: 4, greedy: true, top_k: AREAL_TOP_K_OFF });
    expect(y.actor.adv_norm).toMatchObject({ mean_level: 'group', std_level: 'group', group_size: 4 });
    // GRPO is PPO with values 0 and gamma = lambda = 1 (reward-to-go), normalised in the group and never after it
    expect(y.actor).toMatchObject({ discount: 1, gae_lambda: 1 });
    expect(y.marft.ppo.advantage_norm).toBe(false);
    expect(y.marft.lora).toMatchObject({ mode: 'shared', share_lora: true, init_adapters: { a: 'adapters/shared', b: 'adapters/shared' } });
    expect(y.marft.credit_assignment).toMatchObject({ method: 'step_discount', discount: 0.5 });
    expect(y.agent_profiles.map((p: { lora_path: string }) => p.lora_path)).toEqual(['adapters/shared', 'adapters/shared']);
    expect(Object.keys(files).filter((f) => f.startsWith('adapters/')).sort()).toEqual(['adapters/shared/adapter_config.json', 'adapters/shared/adapter_model.safetensors']);
  });

  it('GRPO writes the group normalisation whatever ppo.advantageNorm says (Dr. GRPO: no std level; population: biased std)', () => {
    const graph = { agents: [{ role: 'a', systemPrompt: 'x' }, { role: 'b', systemPrompt: 'y', withAnswer: true }], edges: [] };
    for (const [groupStd, std_level, std_unbiased] of [['none', null, true], ['population', 'group', false]] as const) {
      const config = parseRunConfig({ algo: 'grpo', rollout: { groupSize: 8 }, ppo: { advantageNorm: false, groupStd, gamma: 0.9, lambda: 0.8 }, graph });
      const y = parse(arealExportFiles(config, adapterFiles(config, 1), { baseModel: 'Qwen/Qwen2.5-0.5B' })[AREAL_CONFIG_FILE] as string);
      expect(y.actor.adv_norm).toEqual({ mean_level: 'group', std_level, std_unbiased, group_size: 8 });
      expect(y.actor).toMatchObject({ discount: 1, gae_lambda: 1 });
    }
  });
});
