// The lab end to end in Chromium (SwiftShader WebGPU): build a 2-agent team, train 2 iterations on the
// built-in model, watch the reward chart, inspect a token's GAE terms, download the adapters, reload and
// resume from the saved checkpoint.

import { mkdirSync, readFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { unzipSync } from 'fflate';
import { SHOTS, openLab, tinySettings, waitForStatus } from './helpers.ts';

test.describe.configure({ mode: 'serial' });
test.setTimeout(600_000);

test('train a 2-agent team, inspect it, export the adapters, reload and resume', async ({ page }) => {
  mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1360, height: 1000 });
  const errors: string[] = [];
  await openLab(page, errors);

  // builder: the 2-agent preset, tiny settings
  await page.getByTestId('preset-select').selectOption('duo');
  await expect(page.getByTestId('graph-editor').locator('[data-testid^="agent-node-"]')).toHaveCount(2);
  await expect(page.getByTestId('agent-node-planner')).toBeVisible();
  await expect(page.getByTestId('agent-node-solver')).toBeVisible();
  await tinySettings(page, 2);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.screenshot({ path: `${SHOTS}/builder.png`, fullPage: true });

  // train 2 iterations
  await page.getByTestId('start-training').click();
  await expect(page.getByTestId('tab-train')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '1', { timeout: 240_000 });
  await page.screenshot({ path: `${SHOTS}/training.png`, fullPage: true });
  await waitForStatus(page, 'done');
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '2');
  await expect(page.getByTestId('progress-text')).toContainText('Iteration 2 / 2');
  await page.screenshot({ path: `${SHOTS}/live.png`, fullPage: true });

  // inspector: an episode, a token, its GAE terms; then the side-by-side credit comparison
  await page.getByTestId('tab-inspect').click();
  const inspector = page.getByTestId('token-inspector');
  await inspector.getByTestId('episode-0').click();
  const firstToken = inspector.getByTestId('episode-view-0').getByTestId('token').first();
  await expect(firstToken).toBeVisible();
  await firstToken.click();
  const gae = page.getByTestId('gae-detail');
  await expect(gae).toContainText('δ = r + γ·V_next − V');
  await expect(gae).toContainText('A = δ + γλ·A_next');
  await page.getByTestId('compare-method').selectOption('step_discount');
  await expect(inspector.getByTestId('episode-view-1')).toContainText('credit: step_discount');
  // the last token of the planner crosses the agent boundary to the solver
  const plannerTokens = inspector.getByTestId('episode-view-0').locator('.action').first().getByTestId('token');
  await plannerTokens.last().click();
  await expect(gae).toContainText(/across the agent boundary|episode ends/);
  await page.getByTestId('color-by').selectOption('value');
  await page.screenshot({ path: `${SHOTS}/inspector.png`, fullPage: true });

  // adapters: a PEFT zip with one folder per agent
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-adapters').click()]);
  expect(download.suggestedFilename()).toMatch(/^marft-adapters-.*-it2\.zip$/);
  const zip = unzipSync(new Uint8Array(readFileSync(await download.path())));
  const names = Object.keys(zip).sort();
  for (const role of ['planner', 'solver']) {
    expect(names).toContain(`agents/${role}/adapter_config.json`);
    expect(names).toContain(`agents/${role}/adapter_model.safetensors`);
    const cfg = JSON.parse(new TextDecoder().decode(zip[`agents/${role}/adapter_config.json`]));
    expect(cfg.peft_type).toBe('LORA');
    expect(cfg.r).toBe(8);
  }
  expect(names).toContain('config.json');
  expect(names).toContain('README.md');

  // reload: the run is listed with its checkpoint; resume it and step one more iteration
  await page.reload();
  await expect(page.getByTestId('gpu-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.getByTestId('tab-runs').click();
  const row = page.getByTestId('runs-table').locator('tr').first();
  await expect(row).toContainText('iteration 2');
  await expect(row).toContainText('planner → solver');
  await page.screenshot({ path: `${SHOTS}/runs.png`, fullPage: true });

  // a checkpoint zip goes out and comes back in as a new run
  const [ckpt] = await Promise.all([page.waitForEvent('download'), row.getByTestId('download-checkpoint').click()]);
  expect(ckpt.suggestedFilename()).toMatch(/^marft-checkpoint-.*\.zip$/);
  const ckptFiles = Object.keys(unzipSync(new Uint8Array(readFileSync(await ckpt.path()))));
  expect(ckptFiles).toContain('state.json');
  expect(ckptFiles).toContain('optimizer.safetensors');
  await page.getByTestId('import-checkpoint').setInputFiles(await ckpt.path());
  await expect(page.getByTestId('notice-IMPORTED')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId('runs-table').locator('tr')).toHaveCount(2);
  await expect(page.getByTestId('runs-table').locator('tr').first()).toContainText('import-');
  const original = page.getByTestId('runs-table').locator('tr').nth(1);
  await expect(original).toContainText('iteration 2');
  await original.getByTestId('resume-run').click();
  await waitForStatus(page, 'paused', 60_000);
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '2');
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '2');
  await page.getByTestId('step-training').click();
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '3', { timeout: 240_000 });
  await waitForStatus(page, 'paused');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '3');
  await page.screenshot({ path: `${SHOTS}/resumed.png`, fullPage: true });
  expect(errors).toEqual([]);
});
