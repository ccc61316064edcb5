// The bundled demo run as a practitioner meets it (Chromium, SwiftShader WebGPU): open it from the empty
// Train tab, see its curves (the metric history of public/demo/checkpoint.zip), inspect a recorded episode,
// then from the Runs tab download its adapters (PEFT, read from storage without loading anything) and the
// built-in base model they name, and check both zips hold what PeftModel.from_pretrained reads. The same
// downloads from an imported checkpoint (fixtures/onnx-e2e/checkpoint.zip) run without public/demo/.

import { mkdirSync, readFileSync } from 'node:fs';
import { type Page, expect, test } from '@playwright/test';
import { unzipSync } from 'fflate';
import { SHOTS, openLab } from './helpers.ts';

test.setTimeout(180_000);

const text = (b: Uint8Array | undefined): string => new TextDecoder().decode(b);
const FIXTURE = new URL('../fixtures/onnx-e2e/checkpoint.zip', import.meta.url).pathname;

/** Runs' "Download base model": marft-tiny.zip, the folder from_pretrained reads once unzipped. */
async function expectBaseModelDownload(page: Page): Promise<void> {
  const base = page.waitForEvent('download');
  await page.getByTestId('download-base-model').click();
  const b = await base;
  expect(b.suggestedFilename()).toBe('marft-tiny.zip');
  const model = unzipSync(new Uint8Array(readFileSync(await b.path())));
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors']) expect(Object.keys(model)).toContain(`marft-tiny/${f}`);
}

test('adapters of any stored checkpoint and the built-in base model download from Runs', async ({ page }) => {
  const errors: string[] = [];
  await openLab(page, errors);
  await page.getByTestId('tab-runs').click();
  await page.getByTestId('import-checkpoint').setInputFiles(FIXTURE);
  await expect(page.getByTestId('notice-IMPORTED')).toBeVisible({ timeout: 30_000 });
  const row = page.getByTestId('runs-table').locator('tr').first();
  const runId = (await row.getAttribute('data-testid'))!.replace(/^run-/, '');
  // nothing is loaded: the adapters come from the checkpoint in storage
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'idle');
  const adapters = page.waitForEvent('download');
  await row.getByTestId('download-run-adapters').click();
  const a = await adapters;
  expect(a.suggestedFilename()).toBe(`marft-adapters-${runId}-it0.zip`);
  const files = unzipSync(new Uint8Array(readFileSync(await a.path())));
  expect(Object.keys(files).sort()).toEqual(['agents/planner/adapter_config.json', 'agents/planner/adapter_model.safetensors', 'agents/solver/adapter_config.json', 'agents/solver/adapter_model.safetensors', 'config.json']);
  await expectBaseModelDownload(page);
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}/runs-downloads.png`, fullPage: true });
  expect(errors).toEqual([]);
});

test('the demo run: curves, episodes, adapters and the base model', async ({ page }) => {
  const errors: string[] = [];
  await openLab(page, errors);
  mkdirSync(SHOTS, { recursive: true });

  // Train is empty until the demo opens; then its history fills the charts and it waits, paused
  await page.getByTestId('tab-train').click();
  await expect(page.getByTestId('train-empty')).toBeVisible();
  await page.getByTestId('open-demo-train').click();
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'paused', { timeout: 90_000 });
  await expect(page.getByTestId('train-empty')).toHaveCount(0);
  const points = Number(await page.getByTestId('reward-chart').getAttribute('data-points'));
  expect(points).toBeGreaterThanOrEqual(3);
  await page.screenshot({ path: `${SHOTS}/demo-train.png`, fullPage: true });

  // Inspect lists the recorded iteration's episodes; one opens with its tokens and a second credit method
  await page.getByTestId('tab-inspect').click();
  await page.getByTestId('episode-list').locator('button').first().click();
  await expect(page.getByTestId('episode-view-0')).toContainText('planner');
  await expect(page.getByTestId('episode-view-0')).toContainText('solver');
  expect(await page.getByTestId('episode-view-0').getByTestId('token').count()).toBeGreaterThan(4);
  await page.getByTestId('compare-method').selectOption('step_discount');
  await expect(page.getByTestId('episode-view-1')).toContainText('credit: step_discount');
  await page.screenshot({ path: `${SHOTS}/demo-inspect.png`, fullPage: true });

  // Runs: the demo is listed read-only; its adapters download as PEFT folders naming the built-in base
  await page.getByTestId('tab-runs').click();
  const row = page.getByTestId('run-demo-duo');
  await expect(row).toContainText('demo · read-only');
  const adapters = page.waitForEvent('download');
  await row.getByTestId('download-run-adapters').click();
  const a = await adapters;
  expect(a.suggestedFilename()).toMatch(/^marft-adapters-demo-duo-it\d+\.zip$/);
  const files = unzipSync(new Uint8Array(readFileSync(await a.path())));
  for (const role of ['planner', 'solver']) {
    const cfg = JSON.parse(text(files[`agents/${role}/adapter_config.json`])) as { peft_type: string; base_model_name_or_path: string };
    expect(cfg.peft_type).toBe('LORA');
    expect(cfg.base_model_name_or_path).toBe('marft-tiny');
    expect(files[`agents/${role}/adapter_model.safetensors`]?.length).toBeGreaterThan(1000);
  }

  // the base model they name, as the folder from_pretrained reads once unzipped
  await expectBaseModelDownload(page);
  await page.screenshot({ path: `${SHOTS}/demo-runs.png`, fullPage: true });
  expect(errors).toEqual([]);
});
