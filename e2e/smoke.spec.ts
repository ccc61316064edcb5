import { expect, test } from '@playwright/test';

test('the built app finds a WebGPU adapter and runs a kernel in its worker', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('/');
  const status = page.getByTestId('gpu-status');
  await expect(status).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(page.getByTestId('adapter-name')).toContainText('adapter:');
  await expect(page.getByTestId('kernel-check')).toHaveAttribute('data-ok', 'true');
  expect(errors).toEqual([]);
});

test('a browser without WebGPU gets a clear message, not a blank page', async ({ page }) => {
  await page.addInitScript(() => {
    Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true });
  });
  await page.goto('/');
  const status = page.getByTestId('gpu-status');
  await expect(status).toHaveAttribute('data-state', 'error');
  await expect(status).toContainText('NO_WEBGPU');
  await expect(status).toContainText('enable-unsafe-webgpu');
});
