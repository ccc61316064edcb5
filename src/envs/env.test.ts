import { describe, expect, it } from 'vitest';
import { arithmeticProblem } from './arithmetic.ts';
import { EnvError } from './errors.ts';
import { MathEnv } from './mathEnv.ts';
import { Envs, createEnv, listEnvs } from './registry.ts';
import type { Env } from './types.ts';

const oneProblem = () => new MathEnv('one', () => ({ problem: 'What is 6*7?', answer: '42' }), 3);

describe('MathEnv', () => {
  it('ends when correct, with reward 1 and judge feedback', () => {
    const env = oneProblem();
    expect(env.reset(0).observation.task).toBe('What is 6*7?');
    const r = env.step({ planner: 'multiply', solver: 'it is \\boxed{42}' });
    expect(r).toMatchObject({ teamReward: 1, done: true, correct: true, feedback: 'judge: the answer is correct' });
    expect(r.rewards).toEqual({ planner: 1, solver: 1 });
    expect(r.answers.solver).toEqual({ answer: '42', correct: true });
  });
  it('runs to the horizon when wrong', () => {
    const env = oneProblem();
    env.reset(0);
    for (let t = 1; t <= 3; t++) {
      const r = env.step({ solver: '\\boxed{41}' });
      expect(r.feedback).toBe('judge: the answer is incorrect');
      expect(r.teamReward).toBe(0);
      expect(r.done).toBe(t === 3);
    }
    expect(() => env.step({ solver: 'x' })).toThrow(EnvError);
  });
  it('takes the team answer from the last answering role that gave one', () => {
    const env = oneProblem();
    env.reset(0);
    // The verifier gives no box, so the solver's answer counts.
    expect(env.step({ solver: '\\boxed{42}', verifier: 'looks right' }).correct).toBe(true);
    env.reset(0);
    // Only the solver answers: the planner's box is ignored.
    expect(env.step({ planner: '\\boxed{42}', solver: '\\boxed{40}' }, { answerRoles: ['solver'] }).correct).toBe(false);
    env.reset(0);
    expect(env.step({ solver: '\\boxed{42}', verifier: '\\boxed{41}' }).correct).toBe(false);
  });
  it('teamReward fraction: the share of answering agents that are right, done when any is (legacy MARFT math_env.py)', () => {
    // math_env.py step(): score = sum(is_correct(a) for answering a) / len(answering); dones when score > 0.
    const env = oneProblem();
    const fraction = { answerRoles: ['solver', 'verifier', 'checker'], teamReward: 'fraction' as const };
    env.reset(0);
    // solver right, verifier wrong, checker gave no answer (counts as wrong): 1/3; the planner does not answer
    const r = env.step({ planner: '\\boxed{42}', solver: '\\boxed{42}', verifier: '\\boxed{41}', checker: 'hmm' }, fraction);
    expect(r.teamReward).toBeCloseTo(1 / 3, 15);
    expect(r).toMatchObject({ correct: true, done: true, feedback: 'judge: the answer is correct' });
    env.reset(0);
    const none = env.step({ solver: '\\boxed{40}', verifier: '\\boxed{41}', checker: '' }, fraction);
    expect(none).toMatchObject({ teamReward: 0, correct: false, done: false });
    // the same turn under 'last': the checker gave no answer, the verifier's wrong one is the team's
    env.reset(0);
    expect(
      env.step(
        { solver: '\\boxed{42}', verifier: '\\boxed{41}', checker: 'hmm' },
        { answerRoles: fraction.answerRoles, teamReward: 'last' },
      ),
    ).toMatchObject({ teamReward: 0, correct: false });
  });
  it('guards its state and actions', () => {
    const env = oneProblem();
    expect(() => env.step({ solver: 'x' })).toThrow(/before reset/);
    env.reset(0);
    expect(() => env.step({})).toThrow(/no actions/);
    expect(() => env.step({ solver: 3 as unknown as string })).toThrow(/not a string/);
    expect(() => new MathEnv('x', () => ({ problem: '', answer: '' }), 0)).toThrow(/horizon must be an integer >= 1/);
  });
});

describe('arithmetic', () => {
  it('makes reproducible problems whose answers evaluate right', () => {
    for (let d = 1; d <= 4; d++) {
      for (let s = 0; s < 30; s++) {
        const p = arithmeticProblem(s, d);
        expect(arithmeticProblem(s, d)).toEqual(p);
        const expr = p.problem.replace(/^Compute (.*)\.$/, '$1');
        expect(String(Function(`return ${expr}`)())).toBe(p.answer);
      }
    }
  });
});

describe('registry', () => {
  it('creates built-ins by name', () => {
    const env = createEnv('arithmetic', { difficulty: 1, horizon: 2 }) as Env;
    expect(env.horizon).toBe(2);
    expect(env.reset(5).observation.task).toMatch(/^Compute /);
    expect(listEnvs().map((e) => e.name)).toEqual(expect.arrayContaining(['arithmetic', 'dataset']));
    expect(() => createEnv('arithmetic', { difficulty: 9 })).toThrow(/difficulty must be an integer in 1..4/);
  });
  it("registers a user environment in one call, in that session's Envs only", () => {
    const echo = (): Env => new MathEnv('echo', (seed) => ({ problem: `say ${seed}`, answer: String(seed) }));
    const envs = new Envs(null);
    envs.register('echo', echo);
    const env = envs.create('echo') as Env;
    env.reset(7);
    expect(env.step({ solver: '\\boxed{7}' }).correct).toBe(true);
    expect(() => envs.register('echo', echo)).toThrow(/already registered/);
    envs.register('echo', echo, { replace: true });
    expect(envs.list().find((e) => e.name === 'echo')).toEqual({ name: 'echo', description: '', builtin: false });
    // another session, and the built-in table, never see it
    expect(() => new Envs(null).create('echo')).toThrow(/no environment named "echo"/);
    expect(listEnvs().map((e) => e.name)).not.toContain('echo');
    expect(envs.unregister('echo')).toBe(true);
    expect(envs.unregister('arithmetic')).toBe(false);
    expect(() => envs.create('echo')).toThrow(/no environment named "echo"/);
  });
  it('names the registered environments for an unknown name', () => {
    try {
      createEnv('nope');
      expect.unreachable();
    } catch (e) {
      expect((e as EnvError).code).toBe('ENV_UNKNOWN');
      expect((e as Error).message).toContain('arithmetic, dataset');
    }
  });
});
