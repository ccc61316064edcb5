// marft train --plan: the plan of a run config on this GPU printed instead of training (nothing is written),
// as text and as JSON, and over a budget the settings to change, each with the peak it would leave.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'marft-plan-'));
const run = (...args: string[]) =>
  spawnSync(process.execPath, [`${ROOT}.build/marft.mjs`, ...args], { encoding: 'utf8', cwd: work, timeout: 120_000 });

describe('marft train --plan', () => {
  let config = '';
  beforeAll(() => {
    const b = spawnSync(process.execPath, [`${ROOT}scripts/bundle.mjs`, `${ROOT}src/cli/marft.ts`, `${ROOT}.build`], { encoding: 'utf8' });
    expect(b.status, b.stderr).toBe(0);
    config = join(work, 'run.json');
    writeFileSync(
      config,
      JSON.stringify({
        model: { path: `${ROOT}public/models/marft-tiny` },
        rollout: { episodes: 4, horizon: 1 },
        graph: { agents: [{ role: 'solver', systemPrompt: 'Solve.', withAnswer: true, maxNewTokens: 64 }], edges: [] },
      }),
    );
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('prints the breakdown and trains nothing', () => {
    const r = run('train', '--plan', '--config', config);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^memory plan \(every generation at its maxNewTokens\): expected peak [\d.]+ MiB in (rollout|score|update)$/m);
    for (const what of [
      'base weights (bf16)',
      'policy LoRA',
      'policy optimiser',
      'critic optimiser',
      'KV cache',
      'prefill forward',
      'saved activations',
    ])
      expect(r.stdout).toContain(what);
    expect(r.stdout).toMatch(/^time per iteration: about /m);
    expect(r.stdout).toMatch(/^fits$/m);
    expect(existsSync(join(work, 'runs'))).toBe(false);
  });

  it('over a budget: what to change, re-planned', () => {
    const json = run('train', '--plan', '--config', config, '--json');
    expect(json.status, json.stderr).toBe(0);
    const { plan } = JSON.parse(json.stdout) as { plan: { peakBytes: number; problems: string[] } };
    expect(plan.problems).toEqual([]);
    const budget = (plan.peakBytes - 1) / 2 ** 30;
    const r = run('train', '--plan', '--config', config, '--budget', String(budget));
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^does not fit: the expected peak of [\d.]+ MiB \(\w+\) is over the memory budget of [\d.]+ MiB$/m);
    expect(r.stdout).toMatch(/^change one of:\n {2}\S/m);
    expect(r.stdout).toMatch(/^ {2}rollout\.episodes 4 -> 2: peak [\d.]+ MiB \(fits\)$/m);
    expect(r.stdout).toMatch(/^ {2}maxNewTokens halved for every agent \(solver 64 -> 32\): peak/m);
  });

  it('refuses flags that do not go with it', () => {
    for (const [args, says] of [
      [['--plan', '--budget', 'lots'], /--budget must be a positive number of GiB, got lots/],
      [['--measure'], /--measure goes with --plan/],
      [['--plan', '--resume', work], /--plan plans a new run from --config/],
    ] as const) {
      const r = run('train', ...args);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(says);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    }
  });
});
