// The bundled demo run as a practitioner meets it (Chromium, SwiftShader WebGPU): open it from the empty
// Train tab, see its curves (the metric history of public/demo/checkpoint.zip), inspect a recorded episode,
// then from the Runs tab download its adapters (PEFT, read from storage without loading anything) and the
// built-in base model they name, and check both zips hold what PeftModel.from_pretrained reads. The same
// downloads from an imported checkpoint (fixtures/onnx-e2e/checkpoint.zip) run without public/demo/. A teacher
// opens it from Inspect (and stays there), takes a recorded episode into the credit sandbox, reads what each
// compared method does, and sees the team curve where it equals the solver's.

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
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'])
    expect(Object.keys(model)).toContain(`marft-tiny/${f}`);
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
  expect(Object.keys(files).sort()).toEqual([
    'agents/planner/adapter_config.json',
    'agents/planner/adapter_model.safetensors',
    'agents/solver/adapter_config.json',
    'agents/solver/adapter_model.safetensors',
    'config.json',
  ]);
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

/** Canvas pixels of the chart within 10 per channel of `rgb` (the CSS colour a legend marker reports). */
async function pixelsOf(page: Page, testid: string, rgb: string): Promise<number> {
  return page
    .getByTestId(testid)
    .locator('canvas')
    .evaluate((c: HTMLCanvasElement, color: string) => {
      const [r, g, b] = color.match(/\d+/g)!.map(Number);
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4)
        if (Math.abs(d[i] - r) <= 10 && Math.abs(d[i + 1] - g) <= 10 && Math.abs(d[i + 2] - b) <= 10 && d[i + 3] > 200) n++;
      return n;
    }, rgb);
}

test('a teacher opens the demo from Inspect: it stays there, the sandbox takes its episodes, each method is explained, the team curve shows', async ({
  page,
}) => {
  const errors: string[] = [];
  await page.setViewportSize({ width: 1360, height: 1000 });
  await openLab(page, errors);
  mkdirSync(SHOTS, { recursive: true });
  const record = JSON.parse(readFileSync('public/demo/episodes.json', 'utf8')) as {
    iteration: number;
    inspected: Record<string, Array<{ actions: Array<{ tokens: Array<{ advantage: number }> }> }>>;
  };

  // "Open the demo run" on Inspect keeps the user on Inspect
  await page.getByTestId('tab-inspect').click();
  await page.getByTestId('open-demo-inspect').click();
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'paused', { timeout: 90_000 });
  await expect(page.getByTestId('tab-inspect')).toHaveAttribute('aria-selected', 'true');
  const inspector = page.getByTestId('token-inspector');
  await expect(inspector.getByTestId('inspect-iteration')).toHaveText(`· iteration ${record.iteration + 1} of the run`);

  // the compare view says what each method does with the run's settings (its per_step helpers pay every role R)
  await inspector.getByTestId('episode-0').click();
  await inspector.getByTestId('compare-method').selectOption('per_step');
  await expect(inspector.getByTestId('method-explain-0')).toContainText(
    "equal: each turn's team reward R goes whole to the turn's last action (solver)",
  );
  await expect(inspector.getByTestId('method-explain-1')).toContainText(
    "per_step: each role's helper turns R into its own reward — planner (helper team): R; solver (helper team): R",
  );
  await expect(inspector.getByTestId('method-explain-1')).toContainText("so the numbers are step_discount's with d = 1");
  await page.screenshot({ path: `${SHOTS}/demo-inspect-compare.png`, fullPage: true });

  // the credit sandbox opens the recorded iteration Inspect shows, and recomputes its numbers as recorded
  await page.getByTestId('sandbox-open').click();
  const sb = page.getByTestId('credit-sandbox');
  await expect(sb.getByTestId('sb-source').locator('option[value="recorded"]')).toHaveText(`recorded (iteration ${record.iteration + 1})`);
  await sb.getByTestId('sb-source').selectOption('recorded');
  await expect(sb.getByTestId('sb-recorded')).toBeVisible();
  await expect(page.getByTestId('notice-NO_EPISODES')).toHaveCount(0);
  await expect(sb.getByTestId('sb-recorded')).toHaveValue('0'); // the episode open in Inspect
  await expect(sb.getByTestId('sb-error')).toHaveCount(0);
  await expect(sb.getByTestId('sb-role-0-0')).toHaveValue('planner');
  await expect(sb.getByTestId('sb-role-0-1')).toHaveValue('solver');
  for (const e of [0, 3]) {
    await sb.getByTestId('sb-recorded').selectOption(String(e));
    const recorded = record.inspected.equal[e].actions;
    for (const ai of [0, 1]) await expect(sb.getByTestId(`sb-adv-${ai}-0`)).toHaveText(recorded[ai].tokens[0].advantage.toFixed(3));
  }
  await sb.scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/demo-sandbox.png`, fullPage: true });

  // Train: the team curve (a band under the agents' lines) stays visible where it equals the solver's
  await page.getByTestId('tab-train').click();
  for (const chart of ['reward-chart', 'accuracy-chart']) {
    const marker = page.getByTestId(chart).locator('.u-series', { hasText: /^team/ }).locator('.u-marker');
    const color = await marker.evaluate((m) => getComputedStyle(m).borderTopColor);
    expect(await pixelsOf(page, chart, color), `${chart}: pixels of the team curve (${color})`).toBeGreaterThan(150);
  }
  await page.getByTestId('reward-chart').screenshot({ path: `${SHOTS}/demo-team-curve.png` });

  // Runs: the ONNX buttons say they give a zip (the model and its tokenizer), not a bare .onnx file
  await page.getByTestId('tab-runs').click();
  const onnx = page.getByTestId('run-demo-duo').getByTestId('export-onnx-planner');
  await expect(onnx).toHaveText('planner (ONNX zip)');
  await expect(onnx).toHaveAttribute('title', /zip of planner\.onnx .*tokenizer/);
  expect(errors).toEqual([]);
});
