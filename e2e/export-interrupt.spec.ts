// Exports under interruption, on an imported checkpoint of the duo team (no training
// needed to have one): while an export runs, a Step, a Continue and a second export are refused with a
// message naming the export, and the run does not move; the engine's worker dying in an export brings the
// banner, the run is unchanged, Restart works, and the export run again gives the same files. The worker is
// held or crashed as the export starts by the test hooks (src/worker/test-hooks.ts).

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Download, type Page, expect, test } from '@playwright/test';
import { unzipSync } from 'fflate';
import { SHOTS, openLab, waitForStatus } from './helpers.ts';

const FIXTURE = new URL('../fixtures/onnx-e2e/checkpoint.zip', import.meta.url).pathname;

type Lab = { holdWorker(point: string): Promise<void>; releaseWorker(): Promise<void>; crashWorker(point: string): Promise<void> };
const lab = (page: Page, f: (l: Lab) => Promise<void>) => page.evaluate(`(${f.toString()})(globalThis.marftLab)`);

/** A downloaded zip's files as name -> SHA-256 (the zip's own bytes hold timestamps, so its files are compared). */
async function files(d: Download): Promise<Record<string, string>> {
  const zip = unzipSync(new Uint8Array(readFileSync(await d.path())));
  return Object.fromEntries(Object.entries(zip).map(([name, bytes]) => [name, createHash('sha256').update(bytes).digest('hex')]));
}

test('exports: a Step or a second export meanwhile is refused with a message; a worker dying in one leaves the run as it was, and the export retried gives the same files', async ({
  page,
}) => {
  test.setTimeout(240_000);
  const errors: string[] = [];
  await openLab(page, errors);
  await page.getByTestId('tab-runs').click();
  await page.getByTestId('import-checkpoint').setInputFiles(FIXTURE);
  const row = page.getByTestId('runs-table').locator('tr').first();
  await expect(row).toContainText('planner → solver');
  const runId = (await row.getAttribute('data-testid'))!.replace(/^run-/, '');
  const exportSolver = async (): Promise<Download> => {
    const downloading = page.waitForEvent('download', { timeout: 60_000 });
    await row.getByTestId('export-onnx-solver').click();
    return downloading;
  };
  const first = await files(await exportSolver());
  expect(Object.keys(first)).toContain('solver.onnx');

  // the run opened (paused at iteration 0), then an export held as it starts
  await row.getByTestId('resume-run').click();
  await waitForStatus(page, 'paused', 60_000);
  await page.getByTestId('tab-runs').click();
  const held = lab(page, (l) => l.holdWorker('export'));
  const heldDownload = exportSolver();
  await held;
  await expect(row.getByTestId('onnx-export-status')).toHaveAttribute('data-state', 'running');
  const refused = page.getByTestId('notice-MODEL_IN_USE');
  await page.getByTestId('step-training').click();
  await expect(refused.filter({ hasText: `Step cannot start now: the export of solver.onnx from ${runId} is running.` })).toBeVisible();
  await page.getByTestId('start-training').click(); // Continue
  await expect(refused.filter({ hasText: 'Training cannot start now' })).toBeVisible();
  await row.getByTestId('download-checkpoint').click(); // a second export
  await expect(refused.filter({ hasText: `The checkpoint export of ${runId} cannot start now: the export of solver.onnx` })).toBeVisible();
  await expect(refused.first()).toContainText('One export runs at a time');
  await page.screenshot({ path: `${SHOTS}/export-refusals.png`, fullPage: true });
  // nothing moved: the run is paused where it was
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'paused');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '0');
  await lab(page, (l) => l.releaseWorker());
  expect(await files(await heldDownload)).toEqual(first);
  await expect(row.getByTestId('onnx-export-status')).toHaveAttribute('data-state', 'done');

  // the worker dies as the next export starts
  await lab(page, (l) => l.crashWorker('export'));
  await row.getByTestId('export-onnx-solver').click();
  const banner = page.getByTestId('engine-gone');
  await expect(banner).toBeVisible({ timeout: 30_000 });
  await expect(banner).toContainText('crashed during an export');
  await expect(row.getByTestId('onnx-export-status')).toHaveAttribute('data-state', 'error');
  await page.getByTestId('restart-engine').click();
  await expect(banner).toBeHidden({ timeout: 120_000 });
  await waitForStatus(page, 'paused', 60_000); // the run in view reopened, still at iteration 0
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '0');
  await page.getByTestId('tab-runs').click();
  await expect(row).toContainText(/iteration 0(?!\d)/);
  expect(await files(await exportSolver())).toEqual(first);
  await expect(row.getByTestId('onnx-export-status')).toHaveAttribute('data-state', 'done');
  // and a Step is taken once the exports are over (then paused at once: a whole iteration of this config takes a minute here)
  await page.getByTestId('step-training').click();
  await waitForStatus(page, 'running', 30_000);
  await page.getByTestId('pause-training').click();
  await waitForStatus(page, 'paused', 60_000);
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '0');
  expect(errors).toEqual([]);
});
