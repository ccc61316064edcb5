import { test } from '@playwright/test';
import { openLab } from './helpers.ts';
test.setTimeout(300_000);
test('walk', async ({ page }) => {
  await page.setViewportSize({ width: 1360, height: 1000 });
  await openLab(page);
  const shot = (n: string) => page.screenshot({ path: `/tmp/walk/${n}.png`, fullPage: true });
  await shot('01-open');
  await page.getByTestId('tab-build').click();
  await shot('02-build');
  const envSel = page.getByTestId('env-select');
  if (await envSel.count()) { await envSel.selectOption('coop-plan'); }
  await page.waitForTimeout(500);
  await shot('03-build-coop-plan');
  await page.getByTestId('field-credit.method').selectOption('per_step');
  await page.waitForTimeout(300);
  await shot('04-per-step');
  await page.getByTestId('tab-inspect').click();
  await page.getByTestId('sandbox-open').click();
  await page.waitForTimeout(500);
  await page.getByTestId('sb-method').selectOption('per_step');
  await page.waitForTimeout(800);
  await shot('05-sandbox');
});
