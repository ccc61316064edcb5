// `marft env test` from the bundled CLI, with no model and no GPU: a good module's report (tasks, steps,
// determinism, timings), and a failing one (a throw, a module that is not deterministic, a hang) exits 1
// naming the module, the call and the problem.

import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const OUT = join(ROOT, '.build/env-test');
const run = (...args: string[]) => spawnSync(process.execPath, [join(OUT, 'marft.mjs'), ...args], { encoding: 'utf8', cwd: ROOT });
const write = (name: string, text: string): string => {
  const p = join(OUT, name);
  writeFileSync(p, text);
  return p;
};

describe('marft env test', () => {
  beforeAll(() => {
    mkdirSync(OUT, { recursive: true });
    const b = spawnSync(process.execPath, [join(ROOT, 'scripts/bundle.mjs'), join(ROOT, 'src/cli/marft.ts'), OUT], { encoding: 'utf8' });
    expect(b.status, b.stderr).toBe(0);
  });

  it('reports on a good module', () => {
    const r = run('env', 'test', '--module', 'examples/guess.mjs', '--seeds', '3', '--texts', '["\\\\boxed{8}", "\\\\boxed{4}"]');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^environment module guess\.mjs: env "guess", horizon 4/);
    expect(r.stdout.match(/^seed \d+ {2}task: "I am thinking of a whole number/gm)).toHaveLength(3);
    expect(r.stdout).toMatch(/turn 1 {2}solver: "\\\\boxed\{8\}" -> reward \d/);
    expect(r.stdout).toMatch(/OK: 3 seeds, deterministic per seed; reset [\d.]+ ms mean/);
    const j = run('env', 'test', '--module', 'examples/verifier.mjs', '--seeds', '2', '--roles', 'solver,verifier', '--json');
    expect(j.status, j.stderr).toBe(0);
    const rep = JSON.parse(j.stdout) as { name: string; seeds: Array<{ deterministic: boolean }>; error: unknown };
    expect([rep.name, rep.seeds.length, rep.seeds.every((s) => s.deterministic), rep.error]).toEqual(['verify', 2, true, null]);
  });

  it('fails clearly on a bad module', () => {
    const thrower = write(
      'thrower.mjs',
      "export default () => ({ name: 'x', horizon: 1,\n  reset(seed) { if (seed === 1) throw new Error('bad seed'); return { observation: { task: 't' } }; },\n  step() { return { teamReward: 0, done: true, feedback: '' }; } });\n",
    );
    const t = run('env', 'test', '--module', thrower);
    expect(t.status).toBe(1);
    expect(t.stdout).toMatch(/FAILED \(ENV_MODULE_THROW\)/);
    expect(t.stderr).toMatch(/marft env: environment module "thrower\.mjs", reset\(1\): threw Error: bad seed/);
    const random = write(
      'random.mjs',
      "export default () => ({ name: 'x', horizon: 1,\n  reset() { return { observation: { task: String(Math.random()) } }; },\n  step() { return { teamReward: 0, done: true, feedback: '' }; } });\n",
    );
    const n = run('env', 'test', '--module', random, '--seeds', '1');
    expect(n.status).toBe(1);
    expect(n.stderr).toMatch(/"random\.mjs", reset\(0\): the same seed and actions gave a different result than before/);
    const hang = write('hang.mjs', "export default () => ({ name: 'x', horizon: 1, reset() { for (;;) {} }, step() {} });\n");
    const h = run('env', 'test', '--module', hang, '--time-limit', '300');
    expect(h.status).toBe(1);
    expect(h.stderr).toMatch(/"hang\.mjs", reset\(0\): no answer within 300 ms/);
    expect(run('env', 'test').status).toBe(2);
    expect(run('env', 'test', '--module', join(OUT, 'missing.mjs')).stderr).toMatch(/cannot read the environment module/);
  });
});
