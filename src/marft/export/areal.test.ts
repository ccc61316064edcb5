// The AReaL export (CPU only): the YAML parses back with the yaml package and carries every run-config
// field, in the MARFT examples' layout; adapters sit alongside (per agent, or one shared folder).

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writePeftAdapter } from '../../model/peft.ts';
import { AREAL_CONFIG_FILE, AREAL_LAB_CONFIG_FILE, AREAL_TOP_K_OFF, arealExportFiles, arealMultiAgent } from './areal.ts';
import { type RunConfig, parseRunConfig } from '../../config/run-config.ts';
import { presetGraph } from '../../config/presets.ts';

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
      ppo: { entropy_coef: 0.02, target_kl: 0.01, kl_in: 'loss', epochs: 2, log_prob_norm: 'sum', group_std: 'sample', advantage_norm: true },
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
    // targetKl absent: the level's default the lab uses, GRPO as PPO (action level here: appo_trainer.py's 1e-3 per action)
    expect(y.marft).toMatchObject({ level: 'action' });
    expect(y.marft.ppo).toMatchObject({ target_kl: 1e-3, kl_in: 'loss' });
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

  // The seed's schema: examples/marft/deepscaler_marft_2agent.yaml (multi_agent:) as deepscaler_marft.py reads it,
  // AgentRole's keys (areal/workflow/multi_agent/agent_role.py), the helpers of areal/reward/multi_agent.py.
  describe('multi_agent: block in the seed schema', () => {
    const duo = {
      agents: [
        { role: 'planner', systemPrompt: 'Plan.', maxNewTokens: 32, temperature: 0.7, topP: 0.9, description: 'plans' },
        { role: 'solver', systemPrompt: 'Solve.', withAnswer: true, maxNewTokens: 64 },
      ],
      edges: [{ from: 'planner', to: 'solver' }],
    };
    const block = (over: Record<string, unknown>) => {
      const config = parseRunConfig({ graph: duo, ...over });
      return parse(arealExportFiles(config, adapterFiles(config, 1), { baseModel: 'b' })[AREAL_CONFIG_FILE] as string);
    };

    it('per-agent LoRA, shared critic, equal credit: the 2-agent example\'s fields', () => {
      const y = block({ credit: { method: 'equal', rewardSharing: true }, lora: { mode: 'per_agent' }, critic: { mode: 'shared' } });
      expect(y.multi_agent).toEqual({
        graph_type: 'sequential', orchestration_mode: 'static', use_multi_lora: true, shared_lora: false, lora_name_prefix: 'agent', role_names: ['planner', 'solver'],
        role_configs: {
          planner: { name: 'planner', system_prompt: 'Plan.', description: 'plans', max_new_tokens: 32, temperature: 0.7, top_p: 0.9, lora_name: 'agent_planner' },
          solver: { name: 'solver', system_prompt: 'Solve.', description: '', max_new_tokens: 64, temperature: 1, top_p: 1, lora_name: 'agent_solver' },
        },
        credit_strategy: 'equal', credit_discount: 1, step_reward_fn: null, reward_sharing: true, independent_critic: null,
        shared_policy: true, enable_thinking: false, dump_transcripts: false,
      });
      expect(y.actor.reward_sharing).toBe('${multi_agent.reward_sharing}');
    });

    it('shared LoRA, per-agent critic (multi_head), step_discount', () => {
      const y = block({ credit: { method: 'step_discount', discount: 0.8 }, lora: { mode: 'shared' }, critic: { mode: 'per_agent' } });
      expect(y.multi_agent).toMatchObject({ shared_lora: true, use_multi_lora: true, independent_critic: 'multi_head', credit_strategy: 'step_discount', credit_discount: 0.8, reward_sharing: false, step_reward_fn: null });
      // one physical adapter: no per-role lora_name (the seed then loads it once)
      expect(Object.values(y.multi_agent.role_configs).some((r) => 'lora_name' in (r as object))).toBe(false);
    });

    it('per_step: each role\'s helper as its reward_fn, the fallback as step_reward_fn (team = the seed\'s verifier helper, R)', () => {
      const y = block({ credit: { method: 'per_step', perStep: { planner: 'planner' }, fallback: 'team' } });
      expect(y.multi_agent.credit_strategy).toBe('per_step');
      expect(y.multi_agent.role_configs.planner.reward_fn).toBe('areal.reward.multi_agent.planner_step_reward');
      expect(y.multi_agent.role_configs.solver.reward_fn).toBeUndefined();
      expect(y.multi_agent.step_reward_fn).toBe('areal.reward.multi_agent.verifier_step_reward');
      const solver = block({ credit: { method: 'per_step', perStep: { planner: 'planner', solver: 'solver' }, fallback: null } });
      expect(solver.multi_agent.role_configs.solver.reward_fn).toBe('areal.reward.multi_agent.solver_step_reward');
      expect(solver.multi_agent.step_reward_fn).toBeNull();
      // reward sharing: only the team reward is used, so no step functions are written
      const shared = block({ credit: { method: 'per_step', rewardSharing: true, perStep: { planner: 'planner' } } });
      expect(shared.multi_agent.role_configs.planner.reward_fn).toBeUndefined();
      expect(shared.multi_agent).toMatchObject({ reward_sharing: true, step_reward_fn: null });
    });

    it('a graph that is not a chain in role order goes out as graph_config', () => {
      const y = block({ graph: { agents: [...duo.agents, { role: 'checker', systemPrompt: 'Check.' }], edges: [{ from: 'planner', to: 'solver' }, { from: 'planner', to: 'checker' }] } });
      expect(y.multi_agent.graph_type).toBe('custom');
      expect(y.multi_agent.graph_config).toEqual({
        nodes: [{ id: 'planner', role_name: 'planner' }, { id: 'solver', role_name: 'solver' }, { id: 'checker', role_name: 'checker' }],
        edges: [['planner', 'solver'], ['planner', 'checker']],
      });
    });

    it('a dynamic topology: the orchestrator becomes the seed\'s (orchestration_mode dynamic, its prompt and budget), the workers its roles', () => {
      const graph = presetGraph('orchestrated');
      const orch = graph.agents[0];
      const y = block({ graph });
      expect(y.multi_agent).toMatchObject({
        orchestration_mode: 'dynamic', orchestrator_prompt: orch.systemPrompt, orchestrator_max_new_tokens: orch.maxNewTokens, max_steps: 10,
        role_names: graph.agents.slice(1).map((a) => a.role), graph_type: 'custom',
      });
      expect(y.multi_agent.graph_config.edges).toEqual([]);
    });

    it('only MultiAgentConfig\'s keys (areal/api/cli_args.py), and AgentRole\'s in role_configs', () => {
      const keys = new Set(['graph_type', 'role_names', 'role_configs', 'graph_config', 'transition_messages', 'credit_strategy', 'credit_discount', 'step_reward_fn',
        'shared_policy', 'enable_thinking', 'dump_transcripts', 'orchestration_mode', 'orchestrator_prompt', 'orchestrator_max_new_tokens', 'max_steps',
        'use_multi_lora', 'lora_name_prefix', 'shared_lora', 'reward_sharing', 'independent_critic']);
      const role = new Set(['name', 'system_prompt', 'description', 'max_new_tokens', 'temperature', 'top_p', 'lora_name', 'reward_fn']);
      for (const graph of [duo, presetGraph('orchestrated')]) {
        const y = block({ graph, credit: { method: 'per_step', perStep: Object.fromEntries(graph.agents.map((a, i) => [a.role, i === 0 ? 'planner' : 'team'])) } });
        expect(Object.keys(y.multi_agent).filter((k) => !keys.has(k))).toEqual([]);
        for (const r of Object.values(y.multi_agent.role_configs)) expect(Object.keys(r as object).filter((k) => !role.has(k))).toEqual([]);
      }
    });

    it('a critic mode without a mapping fails naming it', () => {
      const config = parseRunConfig({ graph: duo });
      const odd = { ...config, critic: { ...config.critic, mode: 'ensemble' } } as unknown as RunConfig;
      expect(() => arealMultiAgent(odd)).toThrow(/critic\.mode "ensemble" has no AReaL independent_critic mapping \(known: shared, per_agent, lora\)/);
    });
  });
});
