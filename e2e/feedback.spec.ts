// Pause and Stop feedback in Chromium (SwiftShader): start a run, see "time left" from the device probe's
// estimate before the first iteration and counting down; Pause in the middle of the second iteration (the
// first compiles every pipeline, slow on SwiftShader) shows "pausing…" at once and "paused" within seconds,
// the iteration in flight abandoned (the run is back at 1 completed iteration); Continue counts down again;
// Stop shows "stopping…" at once and "stopped" within seconds.

import { type Page, expect, test } from '@playwright/test';
import { SHOTS, openLab, tinySettings, waitForStatus } from './helpers.ts';

test.setTimeout(540_000);
// How soon a pause acts: at the next decode step the worker hears of it, i.e. after generate's readback (every
// 8 steps, milliseconds on a GPU, up to ~40 s on SwiftShader on a loaded CPU), a scoring chunk or a minibatch.
const ACTS = 120_000;

const etaSeconds = async (page: Page): Promise<number> => Number(await page.getByTestId('eta').getAttribute('data-seconds'));

/** Waits until the run is mid-iteration (a phase shown) and checks the time left counts down meanwhile. */
async function expectCountdown(page: Page): Promise<void> {
  await expect(page.getByTestId('phase')).toContainText(/rollout|score|update/, { timeout: 60_000 });
  await expect(page.getByTestId('eta')).not.toHaveText('–');
  const first = await etaSeconds(page);
  await expect.poll(() => etaSeconds(page), { timeout: 5_000 }).toBeLessThan(first);
}

test('Pause and Stop show at once and act within seconds; time left counts down from the first iteration', async ({ page }) => {
  const errors: string[] = [];
  await openLab(page, errors);
  await tinySettings(page, 3);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.getByTestId('tab-train').click();

  await page.getByTestId('start-training').click();
  await waitForStatus(page, 'running', 60_000);
  await expectCountdown(page); // before any iteration was measured: the probe's estimate
  await expect(page.getByTestId('progress')).toContainText('(estimate)');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '1', { timeout: 300_000 });
  await expect(page.getByTestId('phase')).toContainText(/rollout|score|update/, { timeout: 30_000 });

  await page.getByTestId('pause-training').click();
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'pausing', { timeout: 1_000 });
  await expect(page.getByTestId('run-status')).toContainText('pausing…');
  await page.screenshot({ path: `${SHOTS}/feedback-pausing.png`, fullPage: true });
  await waitForStatus(page, 'paused', ACTS);
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '1'); // the iteration in flight was abandoned
  await expect(page.getByTestId('phase')).toContainText('Continue re-runs it');
  await page.screenshot({ path: `${SHOTS}/feedback-paused.png`, fullPage: true });

  await page.getByTestId('start-training').click(); // Continue
  await waitForStatus(page, 'running', 30_000);
  await expectCountdown(page);
  await page.screenshot({ path: `${SHOTS}/feedback-countdown.png`, fullPage: true });

  await page.getByTestId('stop-training').click();
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'stopping', { timeout: 1_000 });
  await expect(page.getByTestId('run-status')).toContainText('stopping…');
  await waitForStatus(page, 'stopped', ACTS);
  expect(errors).toEqual([]);
});
