// The credit-assignment sandbox's pure logic: a hand-made episode becomes the recorded-episodes JSONL and
// the config that `marft inspect` reads, and the numbers the worker returns for it (inspectRecorded, the
// trainer's computeTargets) are the hand-worked ones of the reference's recursions (MARFT_REFERENCE.md:
// the original codebase's action-level GAE in mat/runner's APPO trainer, the token-level backup of its
// TPPO trainer, and the AReaL-based MARFT's workflow/multi_agent/credit.py strategies and per-step helpers).

import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../config/run-config.ts';
import { presetGraph } from '../../config/presets.ts';
import { inspectRecorded, parseRecordedEpisodes } from '../../marft/inspect-jsonl.ts';
import {
  type Sandbox,
  defaultSandbox,
  explainCredit,
  gaeChain,
  resizeAction,
  sandboxConfig,
  sandboxFromRecorded,
  sandboxJsonl,
  setTurnCount,
} from './sandbox.ts';

const base = parseRunConfig({ graph: presetGraph('duo') });
const roles = base.graph.agents.map((a) => a.role);
const make = (over: Partial<Sandbox> = {}): Sandbox => ({ ...defaultSandbox(roles, base), gamma: 0.9, lambda: 0.5, ...over });
const run = (s: Sandbox) => {
  const config = sandboxConfig(base, s);
  return inspectRecorded(parseRecordedEpisodes(sandboxJsonl(s), config), config);
};

describe('credit sandbox', () => {
  it("starts from one turn, one action per role, reward 1, every critic value 0, the base config's controls", () => {
    const s = defaultSandbox(roles, base);
    expect(s.turns).toEqual([
      {
        reward: 1,
        correct: null,
        actions: [
          { role: 'planner', tokens: 3, values: [0, 0, 0], text: '', score: null },
          { role: 'solver', tokens: 3, values: [0, 0, 0], text: '', score: null },
        ],
      },
    ]);
    expect([s.level, s.algo, s.gamma, s.lambda, s.method]).toEqual([
      base.level,
      base.algo,
      base.ppo.gamma,
      base.ppo.lambda,
      base.credit.method,
    ]);
  });

  it("per_step starts from the planner's plan-step reward when the config sets no helper, else from the config's", () => {
    expect(defaultSandbox(roles, base).perStep).toEqual({ planner: 'planner', solver: 'team' });
    const own = parseRunConfig({ graph: presetGraph('duo'), credit: { method: 'per_step', perStep: { solver: 'solver' } } });
    expect(defaultSandbox(roles, own).perStep).toEqual({ planner: 'team', solver: 'solver' });
    // the default duo: per_step now differs from step_discount (the planner is paid 0.5·0 + 0.5·R for an empty plan)
    const [ps] = run(make({ level: 'action', method: 'per_step' }));
    const [sd] = run(make({ level: 'action', method: 'step_discount' }));
    expect(ps.actions.map((a) => a.rewards)).toEqual([[0.5], [1]]);
    expect(sd.actions.map((a) => a.rewards)).toEqual([[1], [1]]);
  });

  it('action level, values 0: equal puts R on the solver and GAE carries γλ·A to the planner; step_discount gives the planner R·d', () => {
    // equal: r = (0, 1); A_solver = δ = 1; δ_planner = 0 + 0.9·0 − 0 = 0, A_planner = 0 + 0.9·0.5·1 = 0.45
    const [eq] = run(make({ level: 'action', method: 'equal' }));
    expect(eq.actions.map((a) => a.rewards)).toEqual([[0], [1]]);
    expect(eq.actions[0].advantages[0]).toBeCloseTo(0.45, 12);
    expect(eq.actions[1].advantages[0]).toBeCloseTo(1, 12);
    // step_discount d 0.5: r = (0.5, 1); A_planner = 0.5 + 0.45 = 0.95
    const [sd] = run(make({ level: 'action', method: 'step_discount', discount: 0.5 }));
    expect(sd.actions.map((a) => a.rewards[0])).toEqual([0.5, 1]);
    expect(sd.actions[0].advantages[0]).toBeCloseTo(0.95, 12);
    // reward sharing overrides the method: the equal numbers
    expect(
      run(make({ level: 'action', method: 'step_discount', discount: 0.5, rewardSharing: true }))[0].actions.map((a) => a.advantages[0]),
    ).toEqual(eq.actions.map((a) => a.advantages[0]));
  });

  it('typed critic values enter δ: V_planner 0.2, V_solver 0.4 give δ_solver 0.6, δ_planner 0.9·0.4 − 0.2 = 0.16, A_planner 0.16 + 0.45·0.6 = 0.43', () => {
    const s = make({ level: 'action' });
    s.turns[0].actions[0].values[0] = 0.2;
    s.turns[0].actions[1].values[0] = 0.4;
    const [line] = run(s);
    expect(line.actions[1].deltas![0]).toBeCloseTo(0.6, 12);
    expect(line.actions[0].deltas![0]).toBeCloseTo(0.16, 12);
    expect(line.actions[0].advantages[0]).toBeCloseTo(0.43, 12);
    // the classroom chain walks back from the end, with V_next / A_next of the next step
    const chain = gaeChain(line)!;
    expect(chain.map((c) => c.role)).toEqual(['solver', 'planner']);
    expect(chain[0]).toMatchObject({ vNext: 0, aNext: 0 });
    expect(chain[1].vNext).toBe(0.4);
    expect(chain[1].aNext).toBeCloseTo(0.6, 12);
    for (const c of chain) {
      expect(c.delta).toBeCloseTo(c.r + 0.9 * c.vNext - c.v, 12);
      expect(c.a).toBeCloseTo(c.delta + 0.45 * c.aNext, 12);
    }
  });

  it("token level: R on the solver's last token, backed up token by token across the agent boundary (γ = λ = 1 gives A = R on every token)", () => {
    const s = make({
      level: 'token',
      gamma: 1,
      lambda: 1,
      turns: [
        {
          reward: 1,
          correct: null,
          actions: [
            resizeAction({ role: 'planner', tokens: 1, values: [0], text: '', score: null }, 2),
            { role: 'solver', tokens: 1, values: [0], text: '', score: null },
          ],
        },
      ],
    });
    const [line] = run(s);
    expect(line.actions.map((a) => a.rewards)).toEqual([[0, 0], [1]]);
    expect(line.actions.flatMap((a) => a.advantages)).toEqual([1, 1, 1]);
    expect(gaeChain(line)!.map((c) => `${c.role}${c.token}`)).toEqual(['solver0', 'planner1', 'planner0']);
  });

  it("per_step: the planner helper reads the plan's steps, the solver helper the \\boxed{} answer", () => {
    const s = make({ level: 'action', method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } });
    s.turns[0].actions[0].text = '1. add\n2. check';
    s.turns[0].actions[1].text = 'so \\boxed{4}';
    s.turns[0].reward = 0;
    // planner: 0.5·min(2/2, 1) + 0.5·0 = 0.5; solver answered, team wrong: 0.1
    expect(run(s)[0].actions.map((a) => a.rewards[0])).toEqual([0.5, 0.1]);
  });

  it("per_step plan-check (coop-plan): the planner is paid the environment's check of its plan, typed or recorded", () => {
    const plan = parseRunConfig({ graph: presetGraph('duo'), env: { name: 'coop-plan' } });
    const s: Sandbox = { ...defaultSandbox(roles, plan), level: 'action', method: 'per_step' };
    // the builder's suggestion in coop-plan: the planner on plan-check, the solver on the fallback (R)
    expect(s.perStep).toEqual({ planner: 'plan-check', solver: 'team' });
    s.turns[0].reward = 0;
    const computed = (x: Sandbox) => {
      const config = sandboxConfig(plan, x);
      return inspectRecorded(parseRecordedEpisodes(sandboxJsonl(x), config), config)[0].actions.map((a) => a.rewards[0]);
    };
    // no score typed: the helper has no check to pay
    expect(computed(s)).toEqual([0, 0]);
    // a plan right in its first of two steps (score 0.5) on a team that still failed
    s.turns[0].actions[0].score = 0.5;
    expect(computed(s)).toEqual([0.5, 0]);
    // a recorded episode keeps the verdict the environment gave
    const line = JSON.stringify({
      id: 'e1',
      turns: [
        {
          reward: 1,
          actions: [
            { role: 'planner', tokens: 2, value: 0, score: 1 },
            { role: 'solver', tokens: 1, value: 0 },
          ],
        },
      ],
    });
    const rec = sandboxFromRecorded(line, s);
    expect(rec.turns[0].actions.map((a) => a.score)).toEqual([1, null]);
    expect(computed(rec)).toEqual([1, 1]);
  });

  it("GRPO: the group is the episode and the hand-made samples; equal normalises the reward over the group's tokens", () => {
    const s = make({ algo: 'grpo', level: 'action', samples: [[0]] });
    const config = sandboxConfig(base, s);
    expect(config.rollout.groupSize).toBe(2);
    expect(
      sandboxJsonl(s)
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).group),
    ).toEqual(['g0', 'g0']);
    const [e0, e1] = run(s);
    // rewards 1 and 0 on 6 tokens each (two actions of 3): mean 0.5, unbiased std sqrt(3 / 11) = 0.5222329679;
    // 0.5 / 0.5222429679 = 0.9574087748 on every action of e0 (AReaL's pooled normalisation)
    expect(e0.actions[0].advantages[0]).toBeCloseTo(0.9574087748, 9);
    expect(e1.actions[1].advantages[0]).toBeCloseTo(-0.9574087748, 9);
    // agent-and-turn groups: each role's one call, [1, 0] -> +-0.5 / (0.7071067812 + 1e-5) = +-0.7070967813
    const [a0] = run({ ...s, groupNorm: 'agent_turn' });
    expect(a0.actions[0].advantages[0]).toBeCloseTo(0.7070967813, 9);
    expect(gaeChain(e0)).toBeNull();
  });

  it("turns: a new turn copies the last one's actions (its own reward 0); samples follow; a recorded line keeps roles, tokens, values and texts", () => {
    const s = setTurnCount(make(), 2);
    expect(s.turns[1]).toEqual({ reward: 0, correct: null, actions: s.turns[0].actions });
    expect(s.samples).toEqual([[0, 0]]);
    expect(setTurnCount(s, 1).turns).toHaveLength(1);
    const rec = sandboxFromRecorded(
      JSON.stringify({
        id: 'e3',
        turns: [{ reward: 0.5, correct: false, actions: [{ role: 'solver', tokens: 2, value: 0.3, text: 'x' }] }],
      }),
      s,
    );
    expect(rec.turns).toEqual([
      { reward: 0.5, correct: false, actions: [{ role: 'solver', tokens: 2, values: [0.3, 0.3], text: 'x', score: null }] },
    ]);
    expect(JSON.parse(sandboxJsonl(rec)).turns[0].correct).toBe(false);
    expect(rec.samples).toEqual([[0]]);
    expect(resizeAction(rec.turns[0].actions[0], 3).values).toEqual([0.3, 0.3, 0]);
  });

  it('explains each method in words with its numbers', () => {
    expect(explainCredit(make({ method: 'equal' }))).toMatch(
      /^equal: each turn's team reward R goes whole to the turn's last action \(solver\)/,
    );
    expect(explainCredit(make({ method: 'step_discount', discount: 0.7 }))).toContain('d = 0.7');
    expect(explainCredit(make({ method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } }))).toContain(
      'planner (helper planner): 0.5·min(plan steps/2, 1) + 0.5·R; solver (helper solver): R with a \\boxed{} answer',
    );
    expect(explainCredit(make({ method: 'per_step', perStep: { planner: 'team', solver: 'team' } }))).toContain(
      "Every helper here pays R, so the numbers are step_discount's with d = 1",
    );
    expect(explainCredit(make({ method: 'step_discount', rewardSharing: true }))).toContain('reward sharing is on');
    expect(explainCredit(make({ algo: 'grpo' }))).toContain('GRPO has no critic');
    expect(explainCredit(make({ level: 'token' }))).toContain('token by token');
  });
});
