// Interruptions in the browser (issue 18 item 2): a tab reloaded while an iteration is in flight, and the
// engine's worker dying (closed as the browser would kill it, which fires no event). In both the run is
// kept at its last checkpoint in the browser's storage and training goes on from there to the end; the
// dead worker is found by the page's watch (src/worker/client.ts) and named in a banner with a restart.

import { expect, test } from '@playwright/test';
import { SHOTS, openLab, tinySettings, waitForStatus } from './helpers.ts';

async function startTiny(page: import('@playwright/test').Page, iterations: number): Promise<void> {
  await openLab(page);
  await page.getByTestId('preset-select').selectOption('duo');
  await tinySettings(page, iterations);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.getByTestId('start-training').click();
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '1', { timeout: 240_000 });
}

test('a tab reloaded mid-iteration: the run is kept at its last checkpoint and, resumed, trains to the end', async ({ page }) => {
  test.setTimeout(480_000);
  await startTiny(page, 3);
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'running'); // the next iteration is in flight
  await page.reload();
  await expect(page.getByTestId('gpu-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.getByTestId('tab-runs').click();
  const row = page.getByTestId('runs-table').locator('tr').first();
  await expect(row).toContainText(/iteration [12]\b/);
  const kept = Number(/iteration (\d)/.exec((await row.textContent()) ?? '')![1]);
  await row.getByTestId('resume-run').click();
  await waitForStatus(page, 'paused', 60_000);
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', String(kept));
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', String(kept));
  await page.getByTestId('start-training').click();
  await waitForStatus(page, 'done', 300_000);
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '3');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '3');
});

test('a dead engine worker: a banner says so within seconds, and Restart reopens the run and trains it to the end', async ({ page }) => {
  test.setTimeout(480_000);
  const errors: string[] = [];
  await startTiny(page, 3);
  await page.evaluate(() => (globalThis as unknown as { marftLab: { crashWorker(): Promise<void> } }).marftLab.crashWorker());
  const banner = page.getByTestId('engine-gone');
  await expect(banner).toBeVisible({ timeout: 120_000 });
  await expect(banner).toContainText(/stopped.*has not answered for \d+ s/s);
  await expect(banner).toContainText('Runs and checkpoints are kept');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'error');
  await page.screenshot({ path: `${SHOTS}/engine-gone.png`, fullPage: true });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.getByTestId('restart-engine').click();
  await expect(banner).toBeHidden({ timeout: 120_000 });
  await waitForStatus(page, 'done', 300_000);
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '3');
  expect(errors).toEqual([]);
});

test('the engine worker dying in each phase of an iteration: each time the banner, Restart, and training goes on to the end', async ({ page }) => {
  test.setTimeout(600_000);
  const crash = (phase?: string) => page.evaluate((p) => (globalThis as unknown as { marftLab: { crashWorker(p?: string): Promise<void> } }).marftLab.crashWorker(p), phase);
  await openLab(page);
  await page.getByTestId('preset-select').selectOption('duo');
  await tinySettings(page, 6);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  const banner = page.getByTestId('engine-gone');
  // armed on the worker in use; after a restart the run goes on while the next phase is armed on the new one
  // (the checkpoint phase last: a worker dying in a new run's very first save leaves nothing to resume from)
  for (const [i, phase] of ['rollout', 'score', 'advantages', 'update', 'checkpoint'].entries()) {
    await crash(phase);
    if (i === 0) await page.getByTestId('start-training').click();
    await expect(banner).toBeVisible({ timeout: 180_000 });
    await expect(banner).toContainText(`crashed in the ${phase} phase`);
    await page.getByTestId('restart-engine').click();
    await expect(banner).toBeHidden({ timeout: 120_000 });
  }
  await waitForStatus(page, 'done', 400_000);
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '6');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '6');
});
