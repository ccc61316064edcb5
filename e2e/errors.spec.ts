// Errors in the page: a bad dataset, an unreadable model folder, a lost GPU device (the run resumes from
// its last checkpoint). Each shows a catalogue entry (code, message, hint); no run data is lost.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { SHOTS, openLab, tinySettings, waitForStatus } from './helpers.ts';

test.setTimeout(600_000);

test('a bad dataset and an unreadable model folder get clear messages in place', async ({ page }) => {
  await openLab(page);
  await page.getByTestId('env-select').selectOption('dataset');
  await expect(page.getByTestId('issues-env')).toContainText('needs a JSON/JSONL file');
  await page
    .getByTestId('dataset-file')
    .setInputFiles({ name: 'bad.jsonl', mimeType: 'application/json', buffer: Buffer.from('{"problem": "1+1?", "answer": "2"}\n{oops\n') });
  const dsErr = page.getByTestId('dataset-error');
  await expect(dsErr).toHaveAttribute('data-code', 'DATASET_PARSE');
  await expect(dsErr).toContainText('line 2');
  await page.getByTestId('dataset-file').setInputFiles({
    name: 'good.jsonl',
    mimeType: 'application/json',
    buffer: Buffer.from('{"problem": "1+1?", "answer": "2"}\n{"problem": "2+3?", "answer": 5}\n'),
  });
  await expect(page.getByTestId('dataset-status')).toContainText('2 records');
  await expect(dsErr).toHaveCount(0);
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');

  // a refused upload leaves the dataset in use, and the panel says so beside the error
  await page
    .getByTestId('dataset-file')
    .setInputFiles({ name: 'worse.jsonl', mimeType: 'application/json', buffer: Buffer.from('{"problem": "3+3?"}\n') });
  await expect(dsErr).toBeVisible();
  await expect(dsErr).toContainText('it was not used, the environment keeps good.jsonl');
  await expect(page.getByTestId('dataset-status')).toHaveText('good.jsonl: 2 records (in use)');
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
  // a zip is named as one, not read as broken JSON
  const zip = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(60, 1)]);
  await page.getByTestId('dataset-file').setInputFiles({ name: 'records.zip', mimeType: 'application/zip', buffer: zip });
  await expect(dsErr).toHaveAttribute('data-code', 'DATASET_ARCHIVE');
  await expect(dsErr).toContainText('records.zip is a zip archive, not a JSON / JSONL file');
  await expect(page.getByTestId('dataset-status')).toHaveText('good.jsonl: 2 records (in use)');
  // after a reload (the builder restored from this browser, no run loaded) the panel previews the dataset in use
  await page.waitForTimeout(500); // the builder is saved at most once every 300 ms
  await page.reload();
  await expect(page.getByTestId('dataset-status')).toHaveText('good.jsonl: 2 records (in use)');
  await expect(page.getByTestId('dataset-record')).toHaveCount(2);
  await expect(page.getByTestId('env-picker')).not.toContainText('from the loaded run');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'idle');

  const dir = mkdtempSync(join(tmpdir(), 'marft-bad-model-'));
  const folder = join(dir, 'broken-model');
  mkdirSync(folder);
  writeFileSync(join(folder, 'config.json'), '{"model_type": "qwen2", ');
  writeFileSync(join(folder, 'model.safetensors'), 'not a safetensors file');
  await page.getByTestId('model-folder').setInputFiles(folder);
  const mErr = page.getByTestId('model-error');
  await expect(mErr).toBeVisible({ timeout: 30_000 });
  await expect(mErr).toHaveAttribute('data-code', 'CONFIG_INVALID');
  await expect(mErr).toContainText('config.json');
  await page.screenshot({ path: `${SHOTS}/errors.png`, fullPage: true });
});

test('the graph editor adds, connects and removes agents with validation messages in place', async ({ page }) => {
  await openLab(page);
  const graph = page.getByTestId('graph-editor');
  await page.getByTestId('add-agent').click();
  await expect(graph.getByTestId('agent-node-agent_3')).toBeVisible();
  await graph.getByTestId('agent-node-solver').click();
  await page.getByTestId('connect-agent').click();
  await graph.getByTestId('agent-node-agent_3').click();
  await expect(page.locator('.edge-list')).toContainText('solver → agent_3');
  // a cycle is reported under the graph
  await graph.getByTestId('agent-node-agent_3').click();
  await page.getByTestId('connect-agent').click();
  await graph.getByTestId('agent-node-planner').click();
  await expect(page.getByTestId('issues-graph.edges')).toContainText('cycle');
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'false');
  await page.getByRole('button', { name: 'remove edge agent_3 to planner' }).click();
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
  // a bad sampling setting is shown at its field
  await graph.getByTestId('agent-node-agent_3').click();
  await page.getByTestId('field-graph.agents[2].topP').fill('0', { timeout: 10_000 });
  await expect(page.getByTestId('issues-graph.agents[2].topP')).toContainText('(0, 1]');
  await page.getByTestId('start-training').click();
  await expect(page.getByTestId('notice-CONFIG_INVALID')).toBeVisible();
  await page.screenshot({ path: `${SHOTS}/builder-issues.png`, fullPage: true });
  await page.getByTestId('remove-agent').click();
  await expect(graph.locator('[data-testid^="agent-node-"]')).toHaveCount(2);
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
});

test('a lost GPU device: the run resumes from its last checkpoint and finishes', async ({ page }) => {
  await openLab(page);
  await page.getByTestId('preset-select').selectOption('duo');
  await tinySettings(page, 2);
  await page.getByTestId('start-training').click();
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '1', { timeout: 240_000 });
  await page.evaluate(() => (globalThis as unknown as { marftLab: { loseDevice(): Promise<void> } }).marftLab.loseDevice());
  await expect(page.getByTestId('notice-DEVICE_LOST')).toBeVisible({ timeout: 240_000 });
  await expect(page.getByTestId('notice-DEVICE_LOST')).toContainText('resumed on a new device from iteration');
  await waitForStatus(page, 'done', 400_000);
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '2');
  await page.screenshot({ path: `${SHOTS}/device-lost.png`, fullPage: true });
});
