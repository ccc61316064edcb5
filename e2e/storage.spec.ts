// The Storage panel and hostile files in the browser: the Runs tab shows what this site uses of the
// quota the browser grants (navigator.storage.estimate) with its runs and models; a checkpoint zip with a
// "../" entry is refused with ZIP_INVALID and writes nothing; a dataset whose records carry <script> and
// <img onerror> shows them as text (no element made, no handler run).

import { expect, test } from '@playwright/test';
import { zipSync } from 'fflate';
import { SHOTS, openLab } from './helpers.ts';

test.setTimeout(300_000);

test('the storage panel shows usage and quota; a hostile checkpoint zip is refused and writes nothing', async ({ page }) => {
  await openLab(page);
  await page.getByTestId('tab-runs').click();
  const usage = page.getByTestId('storage-usage');
  await expect(usage).toContainText(/\d[\d.]* (B|KiB|MiB|GiB) used of \d[\d.]* (B|KiB|MiB|GiB|TiB) this browser grants the site/, {
    timeout: 30_000,
  });
  await expect(page.getByTestId('storage-bar')).toBeVisible();
  const rowsBefore = await page.getByTestId('storage-run').count();

  const evil = zipSync({ 'state.json': new TextEncoder().encode('{}'), '../../models/evil/config.json': new TextEncoder().encode('{}') });
  await page.getByTestId('import-checkpoint').setInputFiles({ name: 'evil.zip', mimeType: 'application/zip', buffer: Buffer.from(evil) });
  const notice = page.getByTestId('notice-ZIP_INVALID');
  await expect(notice).toBeVisible({ timeout: 30_000 });
  await expect(notice).toContainText('"../../models/evil/config.json" has an unsafe path');
  await page.getByRole('button', { name: 'Refresh' }).first().click();
  await expect(page.getByTestId('storage-run')).toHaveCount(rowsBefore);
  // nothing escaped into the models folder of OPFS either
  const models = await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    const names: string[] = [];
    for await (const [name] of (root as unknown as { entries(): AsyncIterable<[string, unknown]> }).entries()) names.push(name);
    let evilModel = false;
    if (names.includes('models')) {
      try {
        await (await root.getDirectoryHandle('models')).getDirectoryHandle('evil');
        evilModel = true;
      } catch {
        /* absent: good */
      }
    }
    return { names, evilModel };
  });
  expect(models.evilModel).toBe(false);
  // the lab's own folders only: runs, models and the kernel cache (pipeline recipes kept between visits)
  expect(models.names.filter((n) => !['runs', 'models', 'kernels'].includes(n))).toEqual([]);
  await page.screenshot({ path: `${SHOTS}/storage.png`, fullPage: true });
});

test('hostile dataset text renders as text', async ({ page }) => {
  await openLab(page);
  await page.getByTestId('env-select').selectOption('dataset');
  const problem = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> What is 2+3?';
  const answer = '</td><b id="injected">5</b>';
  const lines = [JSON.stringify({ problem, answer }), JSON.stringify({ problem: '1+1?', answer: '2' })].join('\n');
  await page
    .getByTestId('dataset-file')
    .setInputFiles({ name: '<svg onload=alert(1)>.jsonl', mimeType: 'application/json', buffer: Buffer.from(lines) });
  const preview = page.getByTestId('dataset-preview');
  await expect(preview.getByTestId('dataset-status')).toContainText('<svg onload=alert(1)>.jsonl: 2 records');
  const first = preview.getByTestId('dataset-record').first();
  await expect(first.locator('td.problem')).toHaveText(problem);
  await expect(first.locator('td.answer')).toHaveText(answer);
  expect(await preview.locator('img, script, svg, b').count()).toBe(0);
  expect(await page.locator('#injected').count()).toBe(0);
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
});
