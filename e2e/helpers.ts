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

export async function waitForStatus(page: Page, state: string, timeout = 240_000): Promise<void> {
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', state, { timeout });
}

/** Screenshots of every view (outside test-results/, which Playwright empties on each run). */
export const SHOTS = 'test-screens';
