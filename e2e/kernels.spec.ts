// The kernel warm-up after the model loads: skipped by default on this machine's CPU adapter (SwiftShader),
// run with ?warmup=on on the builder's kept config ("Preparing kernels…", then how many were made), its
// pipelines kept in the kernel cache so that the next visit prepares them while the model loads and skips
// the warm-up; a Step right after it trains as usual.

import { expect, test } from '@playwright/test';
import { SHOTS, openLab, tinySettings, waitForStatus } from './helpers.ts';

test('the kernels of the first iteration are prepared after the model loads, and kept for the next visit', async ({ page }) => {
  test.setTimeout(300_000);
  const errors: string[] = [];
  await openLab(page, errors);
  await tinySettings(page, 1);
  const model = page.getByTestId('model-status');
  await expect(model).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(model).toHaveAttribute('data-kernels-prepared', '0');
  await expect(page.getByTestId('kernels-status')).toHaveCount(0); // a CPU adapter: no warm-up by default
  await page.waitForTimeout(600); // the builder is kept (debounced)

  await page.goto('/?warmup=on');
  await page.getByTestId('tab-build').click();
  await expect(page.getByTestId('field-rollout.episodes')).toHaveValue('2'); // the kept builder is what warms up
  const kernels = page.getByTestId('kernels-status');
  await expect(kernels).toHaveAttribute('data-state', 'ready', { timeout: 120_000 });
  expect(Number(await kernels.getAttribute('data-made'))).toBeGreaterThan(10);
  await expect(kernels).toContainText(/^\d+ kernels prepared for the first iteration in \d+\.\d s\.$/);
  await page.screenshot({ path: `${SHOTS}/kernels-prepared.png`, fullPage: true });

  await page.getByTestId('step-training').click();
  await waitForStatus(page, 'paused');
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '1');

  // the next visit: the warm-up's kernels come from the cache while the model loads; no warm-up
  await page.goto('/?warmup=on');
  await page.getByTestId('tab-build').click();
  await expect(model).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  expect(Number(await model.getAttribute('data-kernels-prepared'))).toBeGreaterThan(10);
  await expect(model).toContainText('kernels from earlier runs prepared');
  await expect(page.getByTestId('kernels-status')).toHaveCount(0);
  expect(errors).toEqual([]);
});
