// The Profile panel in Chromium (SwiftShader WebGPU, which has timestamp-query): arm "Profile next
// iteration", Step one tiny iteration, and get its phase wall times and a non-empty, sortable per-kernel
// GPU time table. Also: /?config=classroom opens the lab with the classroom preset run in the builder.

import { expect, test } from '@playwright/test';
import { presetRunConfig } from '../src/config/run-presets.ts';
import { SHOTS, openLab, tinySettings, waitForStatus } from './helpers.ts';

test.setTimeout(150_000);

test('/?config=classroom puts the classroom run config in the builder', async ({ page }) => {
  await page.goto('/?config=classroom');
  await page.getByTestId('tab-build').click();
  const c = presetRunConfig('classroom') as {
    iterations: number;
    rollout: { episodes: number };
    graph: { agents: Array<{ maxNewTokens: number }> };
  };
  await expect(page.getByTestId('field-rollout.episodes')).toHaveValue(String(c.rollout.episodes));
  await expect(page.getByTestId('field-iterations')).toHaveValue(String(c.iterations));
  await expect(page.getByTestId('field-all-max-new-tokens')).toHaveValue(String(c.graph.agents[0].maxNewTokens));
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
});

test('profiles one iteration: phase times and a per-kernel GPU time table', async ({ page }) => {
  const errors: string[] = [];
  await openLab(page, errors);
  await tinySettings(page, 1);
  await page.getByTestId('field-rollout.episodes').fill('1'); // lighter still: the profiled iteration runs slower
  await page.getByTestId('field-all-max-new-tokens').fill('4');
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });

  await page.getByTestId('tab-train').click();
  const panel = page.getByTestId('profile-panel');
  await expect(panel.getByTestId('profile-unsupported')).toHaveCount(0); // SwiftShader exposes timestamp-query
  await panel.getByTestId('profile-next').check();
  await expect(panel).toHaveAttribute('data-armed', 'true');
  await page.getByTestId('step-training').click();
  await waitForStatus(page, 'paused', 120_000);

  const result = panel.getByTestId('profile-result');
  await expect(result).toHaveAttribute('data-iteration', '0');
  await expect(panel).toHaveAttribute('data-armed', 'false'); // one iteration only
  const phases = await result.getByTestId('phase-row').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-phase')));
  expect(phases.slice(0, 4)).toEqual(['rollout', 'score', 'advantages', 'update']);
  const rows = result.getByTestId('kernel-row');
  expect(await rows.count()).toBeGreaterThan(5);
  const kernels = await rows.evaluateAll((rs) =>
    rs.map((r) => ({
      key: r.getAttribute('data-kernel')!,
      calls: Number(r.getAttribute('data-calls')),
      ms: Number(r.getAttribute('data-ms')),
    })),
  );
  expect(kernels.map((k) => k.key)).toContainEqual(expect.stringMatching(/^matmul:.*\/forward$/));
  expect(kernels.every((k) => k.calls > 0 && k.ms >= 0)).toBe(true);
  expect(kernels.reduce((a, k) => a + k.ms, 0)).toBeGreaterThan(0);
  for (let i = 1; i < kernels.length; i++) expect(kernels[i - 1].ms).toBeGreaterThanOrEqual(kernels[i].ms); // largest first

  // sortable: by calls (descending), and per op
  await result.getByTestId('sort-calls').click();
  const calls = await rows.evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('data-calls'))));
  expect(calls).toEqual([...calls].sort((a, b) => b - a));
  await result.getByTestId('profile-group').selectOption('op');
  await expect(result.locator('[data-testid="kernel-row"][data-kernel="matmul"]')).toHaveCount(1);
  await page.screenshot({ path: `${SHOTS}/profile.png`, fullPage: true });
  expect(errors).toEqual([]);
});
