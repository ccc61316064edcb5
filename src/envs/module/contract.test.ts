// The environment-module contract without a sandbox: the static checks of a module's source (imports,
// default export, lines kept) and the host's checks of every result, each malformed case named with the
// module, the call and the field.

import { describe, expect, it } from 'vitest';
import { EnvError } from '../errors.ts';
import { checkEnvInfo, checkReset, checkStep } from './contract.ts';
import { MODULE_TEMPLATE, prepareModule } from './source.ts';

const where = { module: 'm.mjs', call: 'step (seed 3, turn 1)' };
const fails = (f: () => unknown, code: string, msg: RegExp): void => {
  let err: unknown = null;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(EnvError);
  expect((err as EnvError).code).toBe(code);
  expect((err as EnvError).message).toMatch(msg);
  expect((err as EnvError).message).toMatch(/environment module "m\.mjs"/);
};

describe('module source', () => {
  it('rewrites the default export in place and keeps every line', () => {
    const src = 'const a = 1;\nexport const b = 2;\nexport default function f() {}\n';
    const { body } = prepareModule(src, 'm.mjs');
    expect(body.split('\n')).toHaveLength(src.split('\n').length);
    expect(body).toContain('__marft_module.default = function f() {}');
    expect(body).toContain('\nconst b = 2;');
    expect(prepareModule('function g() {}\nexport { g as default };', 'm.mjs').body).toContain('__marft_module.default = g;');
    expect(prepareModule(MODULE_TEMPLATE, 'template').body).toContain('__marft_module.default = function createEnv');
  });

  it('refuses imports, import(), a missing or a second default export', () => {
    fails(
      () => prepareModule("import fs from 'node:fs';\nexport default () => 0;", 'm.mjs'),
      'ENV_MODULE_SYNTAX',
      /line 1: imports are not allowed/,
    );
    fails(
      () => prepareModule("export default async () => { await import('https://x.test/a.js'); };", 'm.mjs'),
      'ENV_MODULE_SYNTAX',
      /import\(\) is not allowed/,
    );
    fails(() => prepareModule('const f = 1;', 'm.mjs'), 'ENV_MODULE_SYNTAX', /no `export default`/);
    fails(() => prepareModule('export default 1;\nexport default 2;', 'm.mjs'), 'ENV_MODULE_SYNTAX', /more than one default export/);
    fails(() => prepareModule('  \n', 'm.mjs'), 'ENV_MODULE_SYNTAX', /source is empty/);
  });
});

describe('module results', () => {
  it('accepts the happy path and fills the optional fields as the built-in envs would', () => {
    expect(checkEnvInfo({ name: 'g', horizon: 2 }, where)).toEqual({ name: 'g', horizon: 2 });
    expect(checkReset({ observation: { task: 't', extra: 1 } }, where)).toEqual({ observation: { task: 't', extra: 1 }, info: {} });
    const s = checkStep({ teamReward: 1, done: true, feedback: 'ok' }, where, ['planner', 'solver']);
    expect(s).toEqual({
      teamReward: 1,
      done: true,
      feedback: 'ok',
      rewards: { planner: 1, solver: 1 },
      correct: true,
      answers: {},
      info: {},
    });
    const full = checkStep(
      {
        teamReward: 0.5,
        done: false,
        feedback: '',
        rewards: { solver: 0.25 },
        correct: false,
        answers: { solver: { answer: null, correct: false } },
        info: { k: [1] },
      },
      where,
      ['solver'],
    );
    expect(full.rewards).toEqual({ solver: 0.25 });
    expect(full.answers.solver).toEqual({ answer: null, correct: false });
  });

  it('names every malformed case', () => {
    fails(() => checkEnvInfo(null, where), 'ENV_MODULE_RESULT', /must return an env object/);
    fails(() => checkEnvInfo({ name: '', horizon: 1 }, where), 'ENV_MODULE_RESULT', /env\.name must be a non-empty string/);
    fails(() => checkEnvInfo({ name: 'x', horizon: 0.5 }, where), 'ENV_MODULE_RESULT', /env\.horizon must be an integer >= 1/);
    fails(() => checkReset('task', where), 'ENV_MODULE_RESULT', /reset must return \{ observation/);
    fails(() => checkReset({ observation: 'x' }, where), 'ENV_MODULE_RESULT', /observation must be an object/);
    fails(() => checkReset({ observation: { task: 3 } }, where), 'ENV_MODULE_RESULT', /observation\.task must be a string, got 3/);
    fails(() => checkReset({ observation: { task: '' }, info: [] }, where), 'ENV_MODULE_RESULT', /info must be an object/);
    fails(() => checkReset({ observation: { task: '' }, infos: {} }, where), 'ENV_MODULE_RESULT', /unknown field "infos"/);
    const ok = { teamReward: 1, done: true, feedback: '' };
    fails(() => checkStep(undefined, where, []), 'ENV_MODULE_RESULT', /step must return/);
    fails(
      () => checkStep({ ...ok, teamReward: null }, where, []),
      'ENV_MODULE_RESULT',
      /teamReward must be a finite number, got null \(NaN and Infinity arrive as null\)/,
    );
    fails(() => checkStep({ ...ok, teamReward: '1' }, where, []), 'ENV_MODULE_RESULT', /teamReward must be a finite number/);
    fails(() => checkStep({ ...ok, done: 'yes' }, where, []), 'ENV_MODULE_RESULT', /done must be true or false/);
    fails(() => checkStep({ teamReward: 1, done: true }, where, []), 'ENV_MODULE_RESULT', /feedback must be a string/);
    fails(() => checkStep({ ...ok, rewards: [1] }, where, []), 'ENV_MODULE_RESULT', /rewards must be an object/);
    fails(() => checkStep({ ...ok, rewards: { solver: 'a' } }, where, []), 'ENV_MODULE_RESULT', /rewards\.solver must be a finite number/);
    fails(() => checkStep({ ...ok, correct: 1 }, where, []), 'ENV_MODULE_RESULT', /correct must be true or false/);
    fails(
      () => checkStep({ ...ok, answers: { solver: { answer: 5, correct: true } } }, where, []),
      'ENV_MODULE_RESULT',
      /answers\.solver must be \{ answer: string \| null/,
    );
    fails(() => checkStep({ ...ok, reward: 1 }, where, []), 'ENV_MODULE_RESULT', /unknown field "reward"/);
    fails(() => checkStep({ ...ok, info: 'x' }, where, []), 'ENV_MODULE_RESULT', /step \(seed 3, turn 1\): info must be an object/);
  });
});
