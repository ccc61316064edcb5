// Shared steps of the lab's e2e tests: open the page with the GPU ready, set tiny training settings
// through the builder, wait for the run to reach a state.

import { type Page, expect } from '@playwright/test';

export async function openLab(page: Page, errors: string[] = []): Promise<void> {
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('/');
  await expect(page.getByTestId('gpu-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
}

/** Tiny settings for SwiftShader: 2 episodes, 8 new tokens, 1 turn, `iterations` iterations, a small critic. */
export async function tinySettings(page: Page, iterations = 2): Promise<void> {
  await page.getByTestId('tab-build').click();
  await page.getByTestId('field-iterations').fill(String(iterations));
  await page.getByTestId('field-rollout.episodes').fill('2');
  await page.getByTestId('field-rollout.horizon').fill('1');
  await page.getByTestId('field-all-max-new-tokens').fill('8');
  await page.getByTestId('field-critic.hidden').fill('32, 16');
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
}

/** Waits for the run's status; at a halt, also for its last checkpoint, which is written after the run shows it. */
export async function waitForStatus(page: Page, state: string, timeout = 240_000): Promise<void> {
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', state, { timeout });
  if (state === 'paused' || state === 'done' || state === 'stopped') await waitForSaved(page);
}

/** Screenshots of every view (outside test-results/, which Playwright empties on each run). */
export const SHOTS = 'test-screens';

/** Waits until no checkpoint is being written (a halted run's last one lands after it shows paused). */
export async function waitForSaved(page: Page, timeout = 60_000): Promise<void> {
  await expect(page.locator('[data-testid="last-checkpoint"][data-saving="true"]')).toHaveCount(0, { timeout });
}
