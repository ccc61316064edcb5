import { describe, expect, it } from 'vitest';
import { configJsonSchema, parseRunConfig, targetKlOf, validateConfig } from './run-config.ts';
import { CONFIG_SCHEMA } from './run-config-schema.ts';
import { ConfigError } from './errors.ts';
import { presetGraph } from './presets.ts';
import { PROFILE_SCHEMA } from './graph.ts';
import { type Schema, schemaAt } from './schema.ts';
import { Envs, createEnv } from '../envs/registry.ts';

const messages = (input: unknown) => validateConfig(input).issues.map((i) => i.message);

describe('run config', () => {
  it('fills the reference defaults', () => {
    const c = parseRunConfig({});
    expect(c.level).toBe('action');
    expect(c.lora).toEqual({ r: 8, alpha: 16, targets: ['q_proj', 'v_proj'], mode: 'per_agent', dropout: 0 });
    expect(c.critic.hidden).toEqual([1024, 512]);
    expect(c.ppo).toMatchObject({
      clip: 0.2,
      valueClip: 0.2,
      entropyCoef: 0.01,
      klCoef: 0,
      klIn: 'loss',
      gamma: 0.99,
      lambda: 0.95,
      maxGradNorm: 0.5,
      valueLoss: 'huber',
      huberDelta: 10,
      adamEps: 1e-5,
    });
    // targetKl absent = the level's default: 1e-3 at action level, as before
    expect(c.ppo.targetKl).toBeUndefined();
    expect(targetKlOf(c)).toBe(1e-3);
    expect(c.rollout.horizon).toBe(3);
    expect(c.graph.agents.map((a) => a.role)).toEqual(['planner', 'solver']);
    expect(c.env).toEqual({ name: 'coop-arith', options: {}, teamReward: 'last' });
    // Serialisable round trip.
    expect(parseRunConfig(JSON.stringify(c))).toEqual(c);
  });
  it('fills the run loop policy, so configs (and checkpoints) made before it keep loading', () => {
    const cadence = { checkpointEvery: 10, checkpointSeconds: 60 };
    expect(parseRunConfig({}).runLoop).toEqual({ keepCheckpoints: 20, ...cadence, rollbackAfter: 3, maxRecoveries: 3 });
    expect(parseRunConfig({ runLoop: { keepCheckpoints: 0 } }).runLoop).toEqual({
      keepCheckpoints: 0,
      ...cadence,
      rollbackAfter: 3,
      maxRecoveries: 3,
    });
    expect(parseRunConfig({ runLoop: { checkpointEvery: 1, checkpointSeconds: 0 } }).runLoop).toMatchObject({
      checkpointEvery: 1,
      checkpointSeconds: 0,
    });
    expect(messages({ runLoop: { checkpointEvery: -1, rollbackAfter: 0, maxRecoveries: -1 } })).toEqual([
      'runLoop.checkpointEvery must be an integer >= 0, got -1',
      'runLoop.rollbackAfter must be an integer >= 1, got 0',
      'runLoop.maxRecoveries must be an integer >= 0, got -1',
    ]);
  });
  it('targetKl: a default per level (legacy MARFT appo_trainer.py 1e-3, tppo_trainer.py 1.7e-6), null = never', () => {
    // tppo_trainer.py: `if total_approx_kl > 1.7e-6` over a per-token mean; appo_trainer.py: `if total_approx_kl > 1e-3` per action
    expect(targetKlOf(parseRunConfig({ level: 'token' }))).toBe(1.7e-6);
    expect(targetKlOf(parseRunConfig({ algo: 'grpo', level: 'token', rollout: { groupSize: 2 } }))).toBe(1.7e-6);
    expect(targetKlOf(parseRunConfig({ algo: 'grpo', rollout: { groupSize: 2 } }))).toBe(1e-3); // GRPO follows the level
    expect(targetKlOf(parseRunConfig({ level: 'token', ppo: { targetKl: 0.01 } }))).toBe(0.01);
    expect(targetKlOf(parseRunConfig({ ppo: { targetKl: null } }))).toBeNull();
    // an old checkpoint's filled config (targetKl 1e-3 written out) keeps its value at token level
    expect(targetKlOf(parseRunConfig({ level: 'token', ppo: { targetKl: 1e-3 } }))).toBe(1e-3);
  });
  it('names the field path, the constraint and the value', () => {
    expect(messages({ ppo: { clip: 'x' } })).toEqual(['ppo.clip must be a number in (0, 1), got "x"']);
    expect(messages({ ppo: { clip: 1 } })).toEqual(['ppo.clip must be a number in (0, 1), got 1']);
    expect(messages({ lora: { r: 2.5, targets: ['q_proj', 'qkv'] } })).toEqual([
      'lora.r must be an integer >= 1, got 2.5',
      'lora.targets[1] must be one of "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", got "qkv"',
    ]);
    expect(messages({ level: 'tokens' })).toEqual(['level must be one of "action", "token", got "tokens"']);
    expect(messages({ ppo: { targetKl: null } })).toEqual([]);
    expect(messages({ ppo: { targetKl: 0 } })).toEqual(['ppo.targetKl must be a number > 0 or null, got 0']);
  });
  it('suggests the nearest name for an unknown field', () => {
    expect(messages({ ppo: { clipp: 0.1 } })).toEqual(['unknown field ppo.clipp (did you mean ppo.clip?)']);
    expect(messages({ banana: 1 })[0]).toMatch(/^unknown field banana; known fields: seed, iterations/);
  });
  it('validates the graph with paths', () => {
    const g = presetGraph('trio');
    g.edges.push({ from: 'verifier', to: 'planner' });
    expect(messages({ graph: g })).toEqual(['graph: the edges form a cycle: planner → solver → verifier → planner']);
    expect(messages({ graph: { agents: [{ role: 'a', topP: 2 }] } })).toEqual(['graph.agents[0].topP must be a number in (0, 1], got 2']);
    expect(messages({ graph: { agents: [{ role: 'a' }, { role: 'a', withAnswer: true }] } })).toEqual([
      'graph: role "a" is used twice (agents[0] and agents[1])',
    ]);
  });
  it('checks cross-field rules', () => {
    expect(messages({ algo: 'grpo' })).toEqual([expect.stringMatching(/^rollout.groupSize must be >= 2 with algo "grpo"/)]);
    expect(messages({ algo: 'grpo', rollout: { groupSize: 4 } })).toEqual([]);
    expect(messages({ credit: { method: 'per_step', perStep: { coder: 'solver', planner: 'planner' } } })).toEqual([
      'credit.perStep.coder names no role of the graph (planner, solver)',
    ]);
    // agent by agent trains one adapter slot at a time: with one shared adapter the "frozen" agents would move too
    expect(messages({ schedule: { mode: 'agent_by_agent' }, lora: { mode: 'shared' } })).toEqual([
      'schedule.mode "agent_by_agent" needs lora.mode "per_agent": with one shared adapter the "frozen" agents would train with the one that trains (set lora.mode to "per_agent", or schedule.mode to "all")',
    ]);
    expect(validateConfig({ schedule: { mode: 'agent_by_agent' }, lora: { mode: 'shared' } }).issues[0].path).toBe('schedule.mode');
    expect(messages({ schedule: { mode: 'agent_by_agent' }, lora: { mode: 'per_agent' } })).toEqual([]);
    expect(
      messages({ schedule: { mode: 'agent_by_agent' }, lora: { mode: 'shared' }, graph: { agents: [{ role: 'solo', withAnswer: true }] } }),
    ).toEqual([]); // one agent: nothing frozen
    expect(messages({ credit: { method: 'per_step', fallback: null, perStep: { planner: 'planner' } } })).toEqual([
      'credit.perStep has no reward for solver and credit.fallback is null',
    ]);
    expect(messages({ env: { name: 'nope' } })[0]).toMatch(/env.name "nope" is not a registered environment/);
    expect(validateConfig({ env: { name: 'nope' } }, { checkEnv: false }).issues).toEqual([]);
    // a name a session registered is known to that session's validation only
    const envs = new Envs(null);
    envs.register('nope', () => createEnv('arithmetic'));
    expect(validateConfig({ env: { name: 'nope' } }, { envs }).issues).toEqual([]);
    expect(messages({ env: { name: 'nope' } })[0]).toMatch(
      /is not a registered environment \(arithmetic, dataset, code, coop-arith, coop-plan\)/,
    );
    // a built-in generator's options are checked by making it
    expect(messages({ env: { name: 'coop-arith', options: { precedence: 2 } } })).toEqual([
      expect.stringMatching(/^env.options: coop-arith: precedence must be a number in \[0, 1\] or null, got 2/),
    ]);
    expect(messages({ env: { name: 'arithmetic', options: { difficulty: 9 } } })).toEqual([
      expect.stringMatching(/^env.options: arithmetic: difficulty/),
    ]);
    expect(messages({ env: { name: 'coop-arith', options: { precedence: 0.8, difficulty: [2, 3] } } })).toEqual([]);
  });
  it('refuses combinations that would train nothing or change nothing, saying what to change', () => {
    const at = (input: unknown) => validateConfig(input).issues.map((i) => i.path);
    expect(messages({ algo: 'grpo', rollout: { groupSize: 4 }, schedule: { criticWarmup: 2 } })).toEqual([
      'schedule.criticWarmup is 2 with algo "grpo", which has no critic: those iterations would train nothing; set it to 0',
    ]);
    expect(messages({ iterations: 3, schedule: { criticWarmup: 3 } })).toEqual([
      'schedule.criticWarmup (3) is not below iterations (3): the policy would never train; lower it or raise iterations',
    ]);
    expect(messages({ iterations: 4, schedule: { criticWarmup: 3 } })).toEqual([]);
    // per_step where every role falls back to "team": the numbers of step_discount with d = 1
    expect(messages({ credit: { method: 'per_step' } })).toEqual([
      expect.stringMatching(
        /^credit.method "per_step" has no step-reward function here.*set credit.perStep \(role -> planner, solver or verifier\) or use method step_discount$/,
      ),
    ]);
    expect(at({ credit: { method: 'per_step', perStep: { planner: 'team', solver: 'team' } } })).toEqual(['credit.perStep']);
    expect(messages({ credit: { method: 'per_step', perStep: { planner: 'planner' } } })).toEqual([]);
    expect(messages({ credit: { method: 'per_step', fallback: 'solver' } })).toEqual([]);
    expect(messages({ credit: { method: 'per_step', rewardSharing: true } })).toEqual([]); // sharing: one team reward, no functions needed
    expect(messages({ ppo: { klIn: 'reward' } })).toEqual([
      'ppo.klIn is "reward" but ppo.klCoef is 0: no KL penalty would reach the rewards; set klCoef > 0 (AReaL uses 0.1) or klIn "loss"',
    ]);
    expect(messages({ ppo: { klIn: 'reward', klCoef: 0.1 } })).toEqual([]);
    expect(at({ algo: 'grpo', rollout: { groupSize: 2 }, ppo: { klIn: 'reward', klCoef: 0.1 } })).toEqual(['ppo.klIn']);
    // a critic LoRA or an episode-reading critic with GRPO, which has no critic
    expect(messages({ algo: 'grpo', rollout: { groupSize: 2 }, critic: { mode: 'lora' } })).toEqual([
      'critic.mode "lora" with algo "grpo", which has no critic: it would train nothing; use algo "ppo" or the defaults (critic.mode "shared", critic.input "own")',
    ]);
    expect(at({ algo: 'grpo', rollout: { groupSize: 2 }, critic: { input: 'episode' } })).toEqual(['critic.input']);
    expect(messages({ critic: { mode: 'lora', input: 'episode' } })).toEqual([]);
    // fraction needs several answering agents and a built-in math env
    expect(messages({ env: { name: 'coop-arith', teamReward: 'fraction' } })).toEqual([
      'env.teamReward "fraction" needs several answering agents, the graph has 1: with one it equals "last"; set "last" or give more agents withAnswer',
    ]);
    const two = presetGraph('trio');
    two.agents[2].withAnswer = true;
    expect(messages({ graph: two, env: { name: 'coop-arith', teamReward: 'fraction' } })).toEqual([]);
    expect(messages({ env: { name: 'coop-arith', teamReward: 'most' } })).toEqual([
      'env.teamReward must be one of "last", "fraction", got "most"',
    ]);
  });
  it('throws a ConfigError listing every problem', () => {
    try {
      parseRunConfig('{"seed": -1, "ppo": {"gamma": 2}}');
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).code).toBe('CONFIG_INVALID');
      expect((e as Error).message).toContain('run config (2 problems)');
      expect((e as Error).message).toContain('seed must be an integer >= 0, got -1');
      expect((e as Error).message).toContain('ppo.gamma must be a number in [0, 1], got 2');
    }
    expect(() => parseRunConfig('{seed: 1}')).toThrow(/not valid JSON/);
    expect(() => parseRunConfig('[]')).toThrow(/the config must be an object/);
  });
  it('exports JSON Schema', () => {
    const s = configJsonSchema() as { properties: Record<string, { properties: Record<string, unknown> }> };
    expect(s.properties.ppo.properties.clip).toEqual({
      description: 'PPO clip ε: the policy ratio is clipped to [1-ε, 1+ε].',
      default: 0.2,
      type: 'number',
      exclusiveMinimum: 0,
      exclusiveMaximum: 1,
    });
    expect(s.properties.ppo.properties.targetKl).toMatchObject({ type: ['number', 'null'] });
    expect(s.properties.level).toMatchObject({ enum: ['action', 'token'], default: 'action' });
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });

  it("describes every field (the builder shows the description as the field's help)", () => {
    const undescribed: string[] = [];
    const walk = (sc: Schema, path: string) => {
      if (sc.type === 'object') for (const [k, sub] of Object.entries(sc.fields)) walk(sub, path ? `${path}.${k}` : k);
      else if (!sc.description) undescribed.push(path);
    };
    walk(CONFIG_SCHEMA, '');
    walk(PROFILE_SCHEMA, 'graph.agents[]');
    expect(undescribed).toEqual([]);
    expect(schemaAt(CONFIG_SCHEMA, 'graph.agents[3].topP')?.description).toMatch(/^Nucleus sampling/);
    expect(schemaAt(CONFIG_SCHEMA, 'credit.perStep.planner')).toMatchObject({ type: 'enum' });
    expect(schemaAt(CONFIG_SCHEMA, 'ppo.nothing')).toBeNull();
    expect(schemaAt(CONFIG_SCHEMA, 'seed.x')).toBeNull();
  });
  it('per_step helpers must fit the environment: a math helper in the code environment is refused naming the code helpers', () => {
    const coderGraph = {
      agents: [
        { role: 'tester', systemPrompt: 't' },
        { role: 'coder', systemPrompt: 'c', withAnswer: true },
      ],
      edges: [{ from: 'tester', to: 'coder' }],
    };
    const code = (perStep: Record<string, string>, extra: Record<string, unknown> = {}) =>
      messages({ env: { name: 'code' }, graph: coderGraph, credit: { method: 'per_step', perStep, ...extra } });
    const [m] = code({ tester: 'tester', coder: 'solver' });
    expect(m).toMatch(
      /^credit\.perStep\.coder "solver" is a math helper .* acts in the code environment; use a code helper: coder \(its code's pass rate on the tests\), tester or reviewer/,
    );
    expect(code({ tester: 'verifier', coder: 'coder' })[0]).toMatch(/credit\.perStep\.tester "verifier" is a math helper/);
    // the fallback covers a role: refused too; planner and team fit any environment
    expect(code({ coder: 'coder' }, { fallback: 'solver' })[0]).toMatch(/^credit\.fallback "solver" is a math helper/);
    expect(code({ tester: 'planner', coder: 'coder' })).toEqual([]);
    expect(code({ tester: 'tester', coder: 'coder' })).toEqual([]);
    // reward sharing reads no helper
    expect(code({ coder: 'solver' }, { rewardSharing: true })).toEqual([]);
    // the coder's pass rate needs the env to run its code: an answering role
    expect(code({ tester: 'coder', coder: 'coder' })[0]).toMatch(
      /credit\.perStep\.tester "coder" scores the role's own code, but "tester" has withAnswer false/,
    );
    // a code helper outside the code environment
    expect(messages({ credit: { method: 'per_step', perStep: { planner: 'planner', solver: 'coder' } } })[0]).toMatch(
      /^credit\.perStep\.solver "coder" is a code helper .* env\.name is "coop-arith"/,
    );
  });

  it("plan-check reads coop-plan's check of the plan role: refused in another env or for another role, naming what to use", () => {
    const plan = (perStep: Record<string, string>, env: Record<string, unknown> = { name: 'coop-plan' }, extra = {}) =>
      messages({ env, credit: { method: 'per_step', perStep, ...extra } });
    expect(plan({ planner: 'plan-check', solver: 'solver' })).toEqual([]);
    expect(plan({ planner: 'plan-check', solver: 'solver' }, { name: 'coop-arith' })[0]).toMatch(
      /^credit\.perStep\.planner "plan-check" reads the coop-plan environment's rule check .* env\.name is "coop-arith", which checks no plan; use planner .* or team, or env\.name "coop-plan"/,
    );
    expect(plan({ planner: 'plan-check', solver: 'plan-check' })[0]).toMatch(
      /^credit\.perStep\.solver "plan-check" scores role "solver"'s plan, but coop-plan checks the plan of role "planner"/,
    );
    expect(plan({ planner: 'planner' }, { name: 'coop-arith' }, { fallback: 'plan-check' })[0]).toMatch(/^credit\.fallback "plan-check"/);
    expect(plan({ planner: 'plan-check', solver: 'solver' }, { name: 'coop-plan', options: { planRole: 'solver' } })[0]).toMatch(
      /credit\.perStep\.planner "plan-check" scores role "planner"'s plan, but coop-plan checks the plan of role "solver"/,
    );
    // reward sharing reads no helper
    expect(plan({ planner: 'plan-check', solver: 'solver' }, { name: 'coop-arith' }, { rewardSharing: true })).toEqual([]);
  });

  it("GRPO grouping and reward shaping: defaults AReaL's (pooled, no shaping), old configs load, a group norm needs groups", () => {
    const c = parseRunConfig({});
    expect(c.ppo).toMatchObject({ groupNorm: 'pooled', rewardScaling: 1, rewardBias: 0, rewardClip: 20, rewardNorm: null });
    // a config saved before these fields (no groupNorm, no reward shaping) loads with the defaults
    const old = JSON.parse(JSON.stringify(c));
    for (const k of ['groupNorm', 'rewardScaling', 'rewardBias', 'rewardClip', 'rewardNorm']) delete old.ppo[k];
    expect(parseRunConfig(old)).toEqual(c);
    expect(messages({ ppo: { rewardNorm: 'group' } })).toEqual([
      'ppo.rewardNorm "group" normalises over a task\'s samples, but rollout.groupSize is 1: every reward would become 0; set rollout.groupSize >= 2 or rewardNorm "batch" or null',
    ]);
    expect(messages({ ppo: { rewardNorm: 'group' }, rollout: { groupSize: 2 } })).toEqual([]);
    expect(messages({ ppo: { rewardNorm: 'batch' }, rollout: { episodes: 1, horizon: 1 } })[0]).toMatch(
      /^ppo\.rewardNorm "batch" normalises over the iteration's rewards, but an iteration has one episode of one turn/,
    );
    expect(messages({ ppo: { rewardNorm: 'batch' }, rollout: { episodes: 2, horizon: 1 } })).toEqual([]);
    expect(messages({ ppo: { groupNorm: 'position' } })[0]).toMatch(/^ppo\.groupNorm must be one of "pooled", "agent_turn"/);
  });
});
