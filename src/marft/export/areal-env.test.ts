// The AReaL export of a run with an environment module: the module and its JSON-lines server are in env/,
// lab_settings.json points at them, README says what the cluster needs, and the server runs the module in Node
// as the lab does (create, reset, step over stdin/stdout).

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../config/run-config.ts';
import { arealLabSettings } from './areal.ts';
import { ENV_SERVER_FILE, arealEnvFiles, arealEnvReadme } from './areal-env.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const GUESS = readFileSync(join(ROOT, 'examples/guess.mjs'), 'utf8');

describe('AReaL export with an environment module', () => {
  it('ships the module and a server that runs it', () => {
    const config = parseRunConfig({ env: { module: 'envs/guess.mjs', moduleSource: GUESS, options: { max: 8 } } });
    expect(config.env.name).toBe('module');
    expect(arealLabSettings(config, { baseModel: 'm' }).env).toEqual({
      name: 'module',
      options: { max: 8 },
      module: 'env/guess.mjs',
      server: `node ${ENV_SERVER_FILE} env/guess.mjs`,
    });
    const files = arealEnvFiles(config);
    expect(files['env/guess.mjs']).toBe(GUESS);
    expect(arealEnvReadme(config).join('\n')).toMatch(/Node\.js 20\+ on the\s+rollout workers/);
    expect(arealEnvFiles(parseRunConfig({}))).toEqual({});

    const dir = join(ROOT, '.build/areal-env-test');
    mkdirSync(join(dir, 'env'), { recursive: true });
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
    const input = [
      { id: 1, op: 'create', inst: 1, options: { max: 8, horizon: 2 } },
      { id: 2, op: 'reset', inst: 1, seed: 3 },
      { id: 3, op: 'step', inst: 1, actions: { solver: '\\boxed{1}' }, stepOptions: { answerRoles: ['solver'] } },
    ]
      .map((x) => JSON.stringify(x))
      .join('\n');
    const r = spawnSync(process.execPath, [ENV_SERVER_FILE, 'env/guess.mjs'], { cwd: dir, input, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const replies = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: number; ok: boolean; value: string });
    expect(replies.map((x) => [x.id, x.ok])).toEqual([
      [1, true],
      [2, true],
      [3, true],
    ]);
    expect(JSON.parse(replies[0].value)).toEqual({ name: 'guess', horizon: 2 });
    expect(JSON.parse(replies[1].value).observation.task).toMatch(/from 1 to 8/);
    expect(JSON.parse(replies[2].value).feedback).toMatch(/^judge: /);
  });
});
