// Every configs/matrix/*.json is what bench/matrix-rows.ts derives (regenerate with
// `npx tsx bench/matrix-configs.ts`) and validates as a run config; the rows name existing references, the
// classroom pair differs only in its credit method, rows that share a team share one base evaluation, and the
// coop-plan rows train marft-tiny-plan on coop-plan.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '../src/config/run-config.ts';
import { presetRunConfig } from '../src/config/run-presets.ts';
import { MATRIX_ROWS, baseKey, matrixConfig, rowByName } from './matrix-rows.ts';

const dir = new URL('../configs/matrix/', import.meta.url);
const read = (name: string) => JSON.parse(readFileSync(new URL(`${name}.json`, dir), 'utf8')) as Record<string, unknown>;

describe('configs/matrix', () => {
  it('holds exactly one file per row', () => {
    expect(
      readdirSync(dir)
        .filter((f) => f.endsWith('.json'))
        .sort(),
    ).toEqual(MATRIX_ROWS.map((r) => `${r.name}.json`).sort());
  });

  for (const row of MATRIX_ROWS) {
    it(`${row.name} validates and is what the row derives`, () => {
      const file = read(row.name);
      expect(file).toEqual(matrixConfig(row));
      const c = parseRunConfig(file);
      expect(c.env.name).toBe(row.family === 'plan' ? 'coop-plan' : 'coop-arith');
      if (row.reference !== null) expect(rowByName(row.reference), `${row.name}'s reference`).toBeDefined();
    });
  }

  it('applies the overrides one level deep and keeps the rest of the preset', () => {
    const c = parseRunConfig(read('grpo-g8-token'));
    expect([c.algo, c.level, c.rollout.episodes, c.rollout.groupSize, c.rollout.horizon, c.schedule.criticWarmup, c.schedule.mode]).toEqual(
      ['grpo', 'token', 16, 8, 1, 0, 'all'],
    );
    expect(c.ppo.lr).toBe(2e-4);
    const o = parseRunConfig(read('team-orchestrated'));
    expect(o.graph.dynamic).toEqual({ orchestrator: 'orchestrator', maxSteps: 4 });
    expect(parseRunConfig(read('kl-reward')).ppo).toMatchObject({ klCoef: 0.1, klIn: 'reward', klEstimator: 'k3', epochs: 2 });
  });

  it('the classroom pair differs only in the credit method, and equals the presets configs/class-*.json', () => {
    const [a, b] = [parseRunConfig(read('class-equal')), parseRunConfig(read('class-per-step'))];
    expect({ ...b, credit: a.credit }).toEqual(a);
    expect([a.credit.method, b.credit.method, b.credit.perStep]).toEqual(['equal', 'per_step', { planner: 'planner' }]);
    expect(read('class-equal')).toEqual(presetRunConfig('class-equal'));
    expect(read('class-per-step')).toEqual(presetRunConfig('class-per-step'));
  });

  it('the coop-plan rows: duo-action on coop-plan and marft-tiny-plan, each against plan-ppo-action', () => {
    const rows = MATRIX_ROWS.filter((r) => r.family === 'plan');
    expect(rows.map((r) => r.name)).toEqual([
      'plan-ppo-action',
      'plan-credit-step-discount',
      'plan-credit-per-step',
      'plan-credit-sharing',
      'plan-schedule-agent-by-agent',
      'plan-critic-lora',
      'plan-orchestrated-routing',
    ]);
    for (const r of rows) {
      const c = parseRunConfig(read(r.name));
      expect([c.env.name, c.model.path, r.reference ?? 'none']).toEqual([
        'coop-plan',
        'builtin:marft-tiny-plan',
        r.name === 'plan-ppo-action' ? 'none' : 'plan-ppo-action',
      ]);
    }
    const [ref, perStep] = [parseRunConfig(read('plan-ppo-action')), parseRunConfig(read('plan-credit-per-step'))];
    expect({ ...perStep, credit: ref.credit }).toEqual(ref);
    expect(perStep.credit).toMatchObject({ method: 'per_step', perStep: { planner: 'plan-check' }, fallback: 'team' });
    expect([ref.critic.mode, parseRunConfig(read('plan-critic-lora')).critic.mode]).toEqual(['shared', 'lora']);
    expect(parseRunConfig(read('plan-orchestrated-routing')).graph.dynamic).toEqual({ orchestrator: 'orchestrator', maxSteps: 4 });
    // a base of their own: another model and environment than the coop-arith rows
    expect(new Set(['ppo-action', 'plan-ppo-action', 'plan-orchestrated-routing'].map((n) => baseKey(read(n)))).size).toBe(3);
    expect(baseKey(read('plan-credit-per-step'))).toBe(baseKey(read('plan-ppo-action')));
  });

  it('shares a base evaluation between rows with the same team, environment and horizon only', () => {
    const key = (n: string) => baseKey(read(n));
    expect(key('grpo-g4-token')).toBe(key('ppo-action'));
    expect(key('critic-lora')).toBe(key('ppo-action'));
    expect(new Set(['ppo-action', 'horizon-3', 'team-solo', 'team-trio', 'anon-duo', 'class-equal'].map(key)).size).toBe(6);
  });
});
