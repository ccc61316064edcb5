// The AReaL export (CPU only): config.yaml parses back with the yaml package and holds only fields of AReaL
// v0.5.3's PPOConfig (areal-ppo-config.json, from areal/api/cli_args.py) plus the multi_agent: block; the
// agents' profiles and the lab's other settings sit beside it, and so do the adapters (per agent, or one
// shared folder).

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writePeftAdapter } from '../../model/peft.ts';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AREAL_AGENTS_FILE,
  AREAL_CONFIG_FILE,
  AREAL_LAB_CONFIG_FILE,
  AREAL_LAB_SETTINGS_FILE,
  AREAL_PPO_KEYS,
  AREAL_PPO_KEYS_SOURCE,
  AREAL_REWARDS_FILE,
  AREAL_TOP_K_OFF,
  arealClusterChanges,
  arealExportFiles,
  arealMultiAgent,
  arealUnknownKeys,
} from './areal.ts';
import { type RunConfig, parseRunConfig } from '../../config/run-config.ts';
import { PRESET_NAMES, presetGraph } from '../../config/presets.ts';
import { PRESET_RUNS, presetRunConfig } from '../../config/run-presets.ts';
import { unzipFiles } from '../../platform/zip.ts';

function adapterFiles(config: RunConfig, seed: number): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  config.graph.agents.forEach((a, i) => {
    const f = writePeftAdapter({
      config: {
        r: 2,
        loraAlpha: 4,
        targetModules: ['q_proj'],
        loraDropout: 0,
        useRslora: false,
        baseModelNameOrPath: 'base',
        layersToTransform: null,
      },
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
      seed: 11,
      iterations: 40,
      graph: {
        agents: [
          {
            role: 'planner',
            systemPrompt: 'Plan "it": no maths.',
            maxNewTokens: 64,
            temperature: 0.7,
            topK: 20,
            topP: 0.9,
            description: 'plans',
          },
          {
            role: 'solver',
            systemPrompt: 'Solve.\nUse \\boxed{}.',
            withAnswer: true,
            maxNewTokens: 128,
            temperature: 0.7,
            topK: 20,
            topP: 0.9,
          },
        ],
        edges: [{ from: 'planner', to: 'solver' }],
      },
      level: 'token',
      credit: { method: 'per_step', discount: 0.9, perStep: { planner: 'planner', solver: 'solver' }, fallback: null },
      lora: { r: 32, alpha: 16, targets: ['q_proj', 'v_proj', 'o_proj'], mode: 'per_agent' },
      critic: { mode: 'per_agent', hidden: [64, 32] },
      schedule: { mode: 'agent_by_agent', interval: 2, criticWarmup: 3 },
      ppo: {
        clip: 0.25,
        valueClip: 0.3,
        entropyCoef: 0.02,
        klCoef: 0.1,
        klEstimator: 'k3',
        targetKl: 0.01,
        epochs: 2,
        minibatches: 4,
        gamma: 1,
        lambda: 0.97,
        maxGradNorm: 1,
        lr: 3e-5,
        criticLr: 1e-4,
        adamEps: 1e-8,
        weightDecay: 0.01,
      },
      rollout: { episodes: 8, horizon: 2 },
    });
    const files = arealExportFiles(config, adapterFiles(config, 7), {
      baseModel: '/models/Qwen2.5-3B',
      trialName: 'iter12',
      source: { checkpoint: '/runs/a', iteration: 12 },
    });
    const y = parse(files[AREAL_CONFIG_FILE] as string);
    expect(arealUnknownKeys(y)).toEqual([]);
    expect(Object.keys(y)).toEqual([
      'experiment_name',
      'trial_name',
      'seed',
      'total_train_epochs',
      'total_train_steps',
      'tokenizer_path',
      'gconfig',
      'actor',
      'critic',
      'ref',
      'sglang',
      'multi_agent',
    ]);
    expect(y.seed).toBe(11);
    expect(y.total_train_steps).toBe(40);
    expect(y.trial_name).toBe('iter12');
    expect(JSON.parse(files[AREAL_AGENTS_FILE] as string)).toEqual(
      config.graph.agents.map((a, i) => ({
        agent_id: i,
        agent_name: a.role,
        system_prompt: a.systemPrompt,
        with_answer: a.withAnswer,
        ...(a.description ? { description: a.description } : {}),
        depends_on: i === 0 ? [] : ['planner'],
        lora_path: `adapters/${a.role}`,
        max_new_tokens: a.maxNewTokens,
        temperature: 0.7,
        top_k: 20,
        top_p: 0.9,
      })),
    );
    expect(y.gconfig).toEqual({
      n_samples: 1,
      min_new_tokens: 0,
      max_new_tokens: 128,
      greedy: false,
      temperature: 0.7,
      top_k: 20,
      top_p: 0.9,
    });
    expect(y.actor).toMatchObject({
      path: '/models/Qwen2.5-3B',
      eps_clip: 0.25,
      kl_estimator: 'k3',
      discount: 1,
      gae_lambda: 0.97,
      ppo_n_minibatches: 4,
      use_lora: true,
      peft_type: 'lora',
      lora_rank: 32,
      lora_alpha: 16,
      target_modules: ['q_proj', 'v_proj', 'o_proj'],
      optimizer: { type: 'adam', lr: 3e-5, weight_decay: 0.01, eps: 1e-8, gradient_clipping: 1 },
      adv_norm: { mean_level: 'batch', std_level: 'batch', eps: 1e-5 },
      reward_scaling: 1,
      reward_bias: 0,
      reward_clip: 20,
      reward_norm: null,
    });
    // klIn loss (the default): AReaL has no KL in its loss, so kl_ctl is 0 (not AReaL's 0.1) and the README says so
    expect(y.actor.kl_ctl).toBe(0);
    expect(files['README.md']).toMatch(/KL: the lab adds 0\.1 \* KL\(policy \|\| ref\) to the loss; AReaL has no KL term in its loss/);
    expect(y.critic).toMatchObject({ is_critic: true, eps_clip: 0.3, optimizer: { lr: 1e-4 } });
    expect(y.ref.path).toBe('${actor.path}');
    expect(JSON.parse(files[AREAL_LAB_SETTINGS_FILE] as string)).toEqual({
      level: 'token',
      algo: 'ppo',
      lora: { mode: 'per_agent', dropout: 0, init_adapters: { planner: 'adapters/planner', solver: 'adapters/solver' } },
      credit_assignment: {
        method: 'per_step',
        discount: 0.9,
        reward_sharing: false,
        per_step: { planner: 'planner', solver: 'solver' },
        fallback: null,
      },
      critic: { mode: 'per_agent', input: 'own', hidden: [64, 32], value_loss: 'huber', huber_delta: 10, value_clip: 0.3 },
      graph: { edges: [{ from: 'planner', to: 'solver' }], dynamic: null },
      schedule: { mode: 'agent_by_agent', interval: 2, critic_warmup: 3 },
      ppo: {
        entropy_coef: 0.02,
        target_kl: 0.01,
        kl_coef: 0.1,
        kl_in: 'loss',
        epochs: 2,
        log_prob_norm: 'sum',
        group_std: 'sample',
        group_norm: 'pooled',
        advantage_norm: true,
      },
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
      algo: 'grpo',
      rollout: { groupSize: 4 },
      lora: { mode: 'shared' },
      credit: { method: 'step_discount', discount: 0.5 },
      graph: {
        agents: [
          { role: 'a', systemPrompt: 'x', temperature: 0 },
          { role: 'b', systemPrompt: 'y', withAnswer: true, temperature: 0 },
        ],
        edges: [],
      },
    });
    const files = arealExportFiles(config, adapterFiles(config, 1), { baseModel: 'Qwen/Qwen2.5-0.5B' });
    const y = parse(files[AREAL_CONFIG_FILE] as string);
    const lab = JSON.parse(files[AREAL_LAB_SETTINGS_FILE] as string);
    expect(y.multi_agent.graph_type).toBe('custom');
    expect(y.critic).toBeUndefined();
    expect(y.gconfig).toMatchObject({ n_samples: 4, greedy: true, top_k: AREAL_TOP_K_OFF });
    expect(y.actor.adv_norm).toMatchObject({ mean_level: 'group', std_level: 'group', group_size: 4 });
    // GRPO is PPO with values 0 and gamma = lambda = 1 (reward-to-go), normalised in the group and never after it
    expect(y.actor).toMatchObject({ discount: 1, gae_lambda: 1 });
    expect(lab.ppo.advantage_norm).toBe(false);
    // targetKl absent: the level's default the lab uses, GRPO as PPO (action level here: appo_trainer.py's 1e-3 per action)
    expect(lab).toMatchObject({ level: 'action' });
    expect(lab.ppo).toMatchObject({ target_kl: 1e-3, kl_in: 'loss' });
    expect(lab.lora).toMatchObject({ mode: 'shared', init_adapters: { a: 'adapters/shared', b: 'adapters/shared' } });
    expect(lab.credit_assignment).toMatchObject({ method: 'step_discount', discount: 0.5 });
    expect(JSON.parse(files[AREAL_AGENTS_FILE] as string).map((p: { lora_path: string }) => p.lora_path)).toEqual([
      'adapters/shared',
      'adapters/shared',
    ]);
    expect(
      Object.keys(files)
        .filter((f) => f.startsWith('adapters/'))
        .sort(),
    ).toEqual(['adapters/shared/adapter_config.json', 'adapters/shared/adapter_model.safetensors']);
  });

  it('GRPO writes the group normalisation whatever ppo.advantageNorm says (Dr. GRPO: no std level; population: biased std)', () => {
    const graph = {
      agents: [
        { role: 'a', systemPrompt: 'x' },
        { role: 'b', systemPrompt: 'y', withAnswer: true },
      ],
      edges: [],
    };
    for (const [groupStd, std_level, std_unbiased] of [
      ['none', null, true],
      ['population', 'group', false],
    ] as const) {
      const config = parseRunConfig({
        algo: 'grpo',
        rollout: { groupSize: 8 },
        ppo: { advantageNorm: false, groupStd, gamma: 0.9, lambda: 0.8 },
        graph,
      });
      const y = parse(arealExportFiles(config, adapterFiles(config, 1), { baseModel: 'Qwen/Qwen2.5-0.5B' })[AREAL_CONFIG_FILE] as string);
      expect(y.actor.adv_norm).toEqual({ mean_level: 'group', std_level, std_unbiased, eps: 1e-5, group_size: 8 });
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

    it("per-agent LoRA, shared critic, equal credit: the 2-agent example's fields", () => {
      const y = block({ credit: { method: 'equal', rewardSharing: true }, lora: { mode: 'per_agent' }, critic: { mode: 'shared' } });
      expect(y.multi_agent).toEqual({
        graph_type: 'sequential',
        orchestration_mode: 'static',
        use_multi_lora: true,
        shared_lora: false,
        lora_name_prefix: 'agent',
        role_names: ['planner', 'solver'],
        role_configs: {
          planner: {
            name: 'planner',
            system_prompt: 'Plan.',
            description: 'plans',
            max_new_tokens: 32,
            temperature: 0.7,
            top_p: 0.9,
            lora_name: 'agent_planner',
          },
          solver: {
            name: 'solver',
            system_prompt: 'Solve.',
            description: '',
            max_new_tokens: 64,
            temperature: 1,
            top_p: 1,
            lora_name: 'agent_solver',
          },
        },
        credit_strategy: 'equal',
        credit_discount: 1,
        step_reward_fn: null,
        reward_sharing: true,
        independent_critic: null,
        shared_policy: true,
        enable_thinking: false,
        dump_transcripts: false,
      });
      expect(y.actor.reward_sharing).toBeUndefined();
    });

    it('shared LoRA, per-agent critic (multi_head), step_discount', () => {
      const y = block({ credit: { method: 'step_discount', discount: 0.8 }, lora: { mode: 'shared' }, critic: { mode: 'per_agent' } });
      expect(y.multi_agent).toMatchObject({
        shared_lora: true,
        use_multi_lora: true,
        independent_critic: 'multi_head',
        credit_strategy: 'step_discount',
        credit_discount: 0.8,
        reward_sharing: false,
        step_reward_fn: null,
      });
      // one physical adapter: no per-role lora_name (the seed then loads it once)
      expect(Object.values(y.multi_agent.role_configs).some((r) => 'lora_name' in (r as object))).toBe(false);
    });

    it("per_step: each role's helper as its reward_fn, the fallback as step_reward_fn (team = the seed's verifier helper, R)", () => {
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
      const y = block({
        graph: {
          agents: [...duo.agents, { role: 'checker', systemPrompt: 'Check.' }],
          edges: [
            { from: 'planner', to: 'solver' },
            { from: 'planner', to: 'checker' },
          ],
        },
      });
      expect(y.multi_agent.graph_type).toBe('custom');
      expect(y.multi_agent.graph_config).toEqual({
        nodes: [
          { id: 'planner', role_name: 'planner' },
          { id: 'solver', role_name: 'solver' },
          { id: 'checker', role_name: 'checker' },
        ],
        edges: [
          ['planner', 'solver'],
          ['planner', 'checker'],
        ],
      });
    });

    it("a dynamic topology: the orchestrator becomes the seed's (orchestration_mode dynamic, its prompt and budget), the workers its roles", () => {
      const graph = presetGraph('orchestrated');
      const orch = graph.agents[0];
      const y = block({ graph });
      expect(y.multi_agent).toMatchObject({
        orchestration_mode: 'dynamic',
        orchestrator_prompt: orch.systemPrompt,
        orchestrator_max_new_tokens: orch.maxNewTokens,
        max_steps: 10,
        role_names: graph.agents.slice(1).map((a) => a.role),
        graph_type: 'custom',
      });
      expect(y.multi_agent.graph_config.edges).toEqual([]);
    });

    it("only MultiAgentConfig's keys (areal/api/cli_args.py), and AgentRole's in role_configs", () => {
      const keys = new Set([
        'graph_type',
        'role_names',
        'role_configs',
        'graph_config',
        'transition_messages',
        'credit_strategy',
        'credit_discount',
        'step_reward_fn',
        'shared_policy',
        'enable_thinking',
        'dump_transcripts',
        'orchestration_mode',
        'orchestrator_prompt',
        'orchestrator_max_new_tokens',
        'max_steps',
        'use_multi_lora',
        'lora_name_prefix',
        'shared_lora',
        'reward_sharing',
        'independent_critic',
      ]);
      const role = new Set(['name', 'system_prompt', 'description', 'max_new_tokens', 'temperature', 'top_p', 'lora_name', 'reward_fn']);
      for (const graph of [duo, presetGraph('orchestrated')]) {
        const y = block({
          graph,
          credit: { method: 'per_step', perStep: Object.fromEntries(graph.agents.map((a, i) => [a.role, i === 0 ? 'planner' : 'team'])) },
        });
        expect(Object.keys(y.multi_agent).filter((k) => !keys.has(k))).toEqual([]);
        for (const r of Object.values(y.multi_agent.role_configs)) expect(Object.keys(r as object).filter((k) => !role.has(k))).toEqual([]);
      }
    });

    it('a critic mode without a mapping fails naming it', () => {
      const config = parseRunConfig({ graph: duo });
      const odd = { ...config, critic: { ...config.critic, mode: 'ensemble' } } as unknown as RunConfig;
      expect(() => arealMultiAgent(odd)).toThrow(
        /critic\.mode "ensemble" has no AReaL independent_critic mapping \(known: shared, per_agent, lora\)/,
      );
    });
  });

  describe("config.yaml loads into AReaL v0.5.3's PPOConfig as it is", () => {
    const ROOT = new URL('../../../', import.meta.url).pathname;
    const exportOf = (config: RunConfig) => arealExportFiles(config, adapterFiles(config, 1), { baseModel: 'Qwen/Qwen2.5-0.5B' });
    const yamlOf = (config: RunConfig) => parse(exportOf(config)[AREAL_CONFIG_FILE] as string);

    it("the key tree is PPOConfig's at v0.5.3, and the old layout's keys are refused by it", () => {
      expect(AREAL_PPO_KEYS_SOURCE).toMatch(/AReaL v0\.5\.3 \(areal\/api\/cli_args\.py\)/);
      const actor = AREAL_PPO_KEYS.actor!;
      expect(Object.keys(actor.adv_norm!)).toEqual(['mean_level', 'mean_leave1out', 'std_level', 'std_unbiased', 'eps', 'group_size']);
      expect(actor.reward_norm).toEqual(actor.adv_norm);
      for (const k of ['reward_scaling', 'reward_bias', 'reward_clip', 'kl_ctl', 'use_lora', 'lora_rank']) expect(actor[k]).toBeNull();
      // what the earlier export wrote, each a key OmegaConf's structured merge refuses
      const old = {
        n_agents: 2,
        agent_interaction_mode: 'sequential',
        share_critic: true,
        agent_profiles: [],
        marft: {},
        multi_agent: { anything: 1 },
        actor: { group_size: 4, reward_sharing: false, kl_ctl: 0, adv_norm: { group_size: 4, per_agent: true } },
        gconfig: { n_samples: 4 },
      };
      expect(arealUnknownKeys(old)).toEqual([
        'n_agents',
        'agent_interaction_mode',
        'share_critic',
        'agent_profiles',
        'marft',
        'actor.group_size',
        'actor.reward_sharing',
        'actor.adv_norm.per_agent',
      ]);
    });

    it("every preset's export: the shipped configs, the preset runs, and each team under each algorithm and credit method", () => {
      const configs: Array<[string, RunConfig]> = [];
      for (const dir of ['configs', 'configs/matrix']) {
        for (const f of readdirSync(join(ROOT, dir)).filter((x) => x.endsWith('.json')))
          configs.push([`${dir}/${f}`, parseRunConfig(readFileSync(join(ROOT, dir, f), 'utf8'))]);
      }
      expect(configs.length).toBeGreaterThanOrEqual(30);
      for (const name of Object.keys(PRESET_RUNS)) configs.push([name, parseRunConfig(presetRunConfig(name))]);
      for (const team of PRESET_NAMES) {
        for (const algo of ['ppo', 'grpo']) {
          for (const method of ['equal', 'step_discount', 'per_step']) {
            configs.push([
              `${team} ${algo} ${method}`,
              parseRunConfig({
                graph: presetGraph(team),
                algo,
                rollout: { groupSize: algo === 'grpo' ? 4 : 1 },
                credit: { method, perStep: { [presetGraph(team).agents[0].role]: 'planner' } },
                ppo: {
                  rewardNorm: algo === 'grpo' ? 'group' : 'batch',
                  rewardScaling: 10,
                  rewardBias: -0.5,
                  klIn: algo === 'ppo' ? 'reward' : 'loss',
                  klCoef: 0.1,
                },
              }),
            ]);
          }
        }
      }
      for (const [name, config] of configs) {
        const y = yamlOf(config);
        expect({ name, unknown: arealUnknownKeys(y) }).toEqual({ name, unknown: [] });
        expect(Object.keys(y).filter((k) => k !== 'multi_agent' && !(k in AREAL_PPO_KEYS))).toEqual([]);
      }
    });

    it('checkpoints saved before these settings (fixtures/resume-v1) load and export from their own files', () => {
      for (const f of ['action.zip', 'token.zip']) {
        const files = unzipFiles(new Uint8Array(readFileSync(join(ROOT, 'fixtures/resume-v1', f))));
        const config = parseRunConfig(new TextDecoder().decode(files['config.json']));
        expect(config.ppo).toMatchObject({ groupNorm: 'pooled', rewardScaling: 1, rewardBias: 0, rewardNorm: null });
        const out = arealExportFiles(config, files, { baseModel: 'b' });
        expect(arealUnknownKeys(parse(out[AREAL_CONFIG_FILE] as string))).toEqual([]);
        expect(out['adapters/solver/adapter_model.safetensors']).toEqual(files['agents/solver/adapter_model.safetensors']);
      }
    });

    it('klIn: reward carries klCoef to kl_ctl; klIn: loss writes 0 and says what changes', () => {
      const graph = presetGraph('duo');
      const reward = parseRunConfig({ graph, ppo: { klIn: 'reward', klCoef: 0.1, klEstimator: 'k1' } });
      expect(yamlOf(reward).actor).toMatchObject({ kl_ctl: 0.1, kl_estimator: 'k1' });
      expect(arealClusterChanges(reward).some((l) => l.startsWith('KL'))).toBe(false);
      const loss = parseRunConfig({ graph, ppo: { klIn: 'loss', klCoef: 0.05 } });
      expect(yamlOf(loss).actor.kl_ctl).toBe(0);
      expect(arealClusterChanges(loss)[0]).toMatch(
        /^KL: the lab adds 0\.05 \* KL\(policy \|\| ref\) to the loss; .* kl_ctl is 0, so the cluster run has no KL penalty/,
      );
      const none = parseRunConfig({ graph });
      expect(yamlOf(none).actor.kl_ctl).toBe(0);
      expect(arealClusterChanges(none)[0]).toMatch(/^KL: none in the lab run; kl_ctl is written 0 because AReaL's default \(0\.1\)/);
    });

    it("what the cluster run does differently: the original MARFT code's update choices AReaL does not make", () => {
      const config = parseRunConfig({
        graph: presetGraph('duo'),
        level: 'action',
        schedule: { mode: 'agent_by_agent', interval: 3 },
        ppo: { entropyCoef: 0.01, epochs: 2, klIn: 'reward', klCoef: 0.1 },
      });
      expect(arealClusterChanges(config)).toEqual([
        "Level: the lab ran action-level PPO (one ratio per action); AReaL's loss is per token.",
        "Entropy: the lab's entropy bonus (0.01) has no AReaL key.",
        "Early stop: the lab skipped a minibatch's policy step above approximate KL 0.001; AReaL has no such stop.",
        'Epochs: the lab made 2 passes over each batch; AReaL makes one (ppo_n_minibatches steps).',
        'Schedule: the lab trained one agent at a time (every 3 iterations); AReaL trains every agent each step.',
        "Critic: the lab's critic is an MLP head on the frozen trunk; AReaL's is a value model (critic:), trained from the base model.",
      ]);
      // a token-level GRPO run with AReaL's settings: nothing to report but the KL it has none of
      const areal = parseRunConfig({
        graph: presetGraph('duo'),
        level: 'token',
        algo: 'grpo',
        rollout: { groupSize: 4 },
        ppo: { entropyCoef: 0, targetKl: null },
      });
      expect(arealClusterChanges(areal)).toEqual([
        "KL: none in the lab run; kl_ctl is written 0 because AReaL's default (0.1) would add a reward-side penalty.",
      ]);
    });

    it('reward scaling, bias, clip and normalisation go to the actor as AReaL names them', () => {
      const graph = presetGraph('duo');
      const g = yamlOf(
        parseRunConfig({
          graph,
          algo: 'grpo',
          rollout: { groupSize: 4 },
          ppo: { rewardScaling: 10, rewardBias: -0.5, rewardClip: 5, rewardNorm: 'group' },
        }),
      );
      expect(g.actor).toMatchObject({
        reward_scaling: 10,
        reward_bias: -0.5,
        reward_clip: 5,
        reward_norm: { mean_level: 'group', std_level: 'group', std_unbiased: true, eps: 1e-5, group_size: 4 },
      });
      const b = yamlOf(parseRunConfig({ graph, ppo: { rewardNorm: 'batch' } }));
      expect(b.actor.reward_norm).toEqual({ mean_level: 'batch', std_level: 'batch', std_unbiased: true, eps: 1e-5, group_size: 1 });
    });

    it("GRPO's agent-and-turn groups: AReaL pools the group instead, and the README says so", () => {
      const config = parseRunConfig({
        graph: presetGraph('duo'),
        algo: 'grpo',
        rollout: { groupSize: 4 },
        ppo: { groupNorm: 'agent_turn' },
      });
      expect(yamlOf(config).actor.adv_norm).toMatchObject({ mean_level: 'group', std_level: 'group' });
      expect(exportOf(config)['README.md']).toMatch(
        /GRPO grouping: the lab normalised each action against the same agent's call in the other samples \(agent_turn\); AReaL pools every generated token of the group/,
      );
    });

    it("code roles' step rewards: mapped to the module the export writes beside config.yaml", () => {
      const graph = {
        agents: [
          { role: 'tester', systemPrompt: 't' },
          { role: 'coder', systemPrompt: 'c', withAnswer: true },
          { role: 'reviewer', systemPrompt: 'r' },
        ],
        edges: [
          { from: 'tester', to: 'coder' },
          { from: 'coder', to: 'reviewer' },
        ],
      };
      const config = parseRunConfig({
        graph,
        env: { name: 'code' },
        credit: { method: 'per_step', perStep: { tester: 'tester', coder: 'coder' }, fallback: 'reviewer' },
      });
      const files = exportOf(config);
      const y = parse(files[AREAL_CONFIG_FILE] as string);
      expect(y.multi_agent.role_configs.tester.reward_fn).toBe('marft_lab_rewards.tester_step_reward');
      expect(y.multi_agent.role_configs.coder.reward_fn).toBe('marft_lab_rewards.coder_step_reward');
      expect(y.multi_agent.step_reward_fn).toBe('marft_lab_rewards.reviewer_step_reward');
      for (const fn of ['coder_step_reward', 'tester_step_reward', 'reviewer_step_reward'])
        expect(files[AREAL_REWARDS_FILE]).toContain(`def ${fn}(`);
      expect(files['README.md']).toContain(`${AREAL_REWARDS_FILE}: the code roles' step rewards`);
      // a math run writes no such module
      expect(
        exportOf(parseRunConfig({ graph: presetGraph('duo'), credit: { method: 'per_step', perStep: { planner: 'planner' } } }))[
          AREAL_REWARDS_FILE
        ],
      ).toBeUndefined();
    });
  });
});
