// A user's environment module in the lab (Chromium, SwiftShader WebGPU): load examples/guess.mjs from a
// file in the Build tab, try it on two seeds with a typed answer, see a syntax error in place, check the
// browser sandbox's walls (no network, storage, workers or code from strings; a huge buffer refused, an
// endless loop stopped at the time limit; the page's prototypes untouched), then train one short
// iteration on the module with the duo preset.

import { expect, test } from '@playwright/test';
import { SHOTS, openLab, tinySettings, waitForStatus } from './helpers.ts';

test.setTimeout(600_000);

const PROBE = `Object.prototype.polluted = 'yes';
export default function () {
  return {
    name: 'probe', horizon: 1,
    reset() {
      const out = {};
      for (const k of ['fetch', 'XMLHttpRequest', 'WebSocket', 'importScripts', 'indexedDB', 'caches', 'Worker', 'SharedWorker', 'EventSource', 'BroadcastChannel', 'document', 'window']) out[k] = typeof self[k];
      out.protoFetch = typeof WorkerGlobalScope.prototype.fetch;
      const attempt = (name, f) => { try { out[name] = 'reached: ' + String(f()); } catch (e) { out[name] = 'blocked: ' + e.name; } };
      attempt('Function', () => (function () {}).constructor('return 1')());
      attempt('asyncFunction', () => (async () => {}).constructor('return 1'));
      attempt('eval', () => eval('1'));
      attempt('stringTimer', () => setTimeout('1', 0));
      attempt('bigBuffer', () => new Float64Array(2 ** 30).length);
      return { observation: { task: JSON.stringify(out) }, info: { ['__proto__']: { admin: true } } };
    },
    step() { return { teamReward: 0, done: true, feedback: '' }; },
  };
}
`;

test('load a module from a file, try it, train one iteration on it', async ({ page }) => {
  const errors: string[] = [];
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  await openLab(page, errors);
  await page.getByTestId('preset-select').selectOption('duo');
  await tinySettings(page, 1);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });

  // the module editor: the template first, then a file
  await page.getByTestId('env-select').selectOption('module');
  await expect(page.getByTestId('module-source')).toHaveValue(/export default function createEnv/);
  await page.getByTestId('module-file').setInputFiles('examples/guess.mjs');
  await expect(page.getByTestId('module-source')).toHaveValue(/createGuessEnv/);

  // try it: two seeds, a typed answer
  await page.getByTestId('module-seeds').fill('0, 1');
  await page.getByTestId('module-answer').fill('\\boxed{8}');
  await page.getByTestId('module-try').click();
  const report = page.getByTestId('module-try-report');
  await expect(report.getByTestId('module-try-seed')).toHaveCount(2, { timeout: 30_000 });
  await expect(report).toContainText('env "guess", horizon 1');
  await expect(report.getByTestId('module-try-seed').first()).toContainText('I am thinking of a whole number from 1 to 16');
  await expect(report.getByTestId('module-try-seed').first()).toContainText(
    /feedback “judge: 8 is (right|wrong, the number is (higher|lower))”/,
  );
  await expect(report.getByTestId('module-try-seed').first()).toContainText('same results when replayed');
  await page.screenshot({ path: `${SHOTS}/env-module.png`, fullPage: true });

  // a syntax error shows in place, with its line
  const source = page.getByTestId('module-source');
  await source.fill('const a = 1;\n\nexport default () => ({ reset( { });\n');
  await expect(page.getByTestId('module-syntax-error')).toContainText(/line 3/, { timeout: 30_000 });
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true'); // static checks pass; the sandbox found it
  await source.fill('const a = 1;\nexport const b = 2;\n');
  await expect(page.getByTestId('issues-env.moduleSource')).toContainText('no `export default`');

  // the sandbox's walls in Chromium
  await source.fill(PROBE);
  await page.getByTestId('module-seeds').fill('0');
  await page.getByTestId('module-try').click();
  const seed = report.getByTestId('module-try-seed').first();
  await expect(seed).toContainText('"fetch":"undefined"', { timeout: 30_000 });
  const probe = JSON.parse((await seed.textContent())!.replace(/^seed 0: /, '').replace(/step →[\s\S]*$/, '')) as Record<string, string>;
  for (const k of [
    'fetch',
    'XMLHttpRequest',
    'WebSocket',
    'importScripts',
    'indexedDB',
    'caches',
    'Worker',
    'SharedWorker',
    'EventSource',
    'BroadcastChannel',
    'document',
    'window',
    'protoFetch',
  ])
    expect(probe[k], k).toBe('undefined');
  for (const k of ['Function', 'asyncFunction', 'eval', 'stringTimer', 'bigBuffer']) expect(probe[k], k).toMatch(/^blocked/);
  expect(await page.evaluate(() => (({}) as Record<string, unknown>).polluted)).toBeUndefined();
  await source.fill("export default () => ({ name: 'loop', horizon: 1, reset() { for (;;) {} }, step() {} });\n");
  await page.getByTestId('module-try').click();
  await expect(page.getByTestId('module-try-error')).toContainText(/reset\(0\): no answer within 5000 ms/, { timeout: 30_000 });
  await expect(page.getByTestId('module-try-error')).toHaveAttribute('data-code', 'ENV_MODULE_TIMEOUT');

  // train one short iteration on the guessing module
  await page.getByTestId('module-file').setInputFiles('examples/guess.mjs');
  await expect(source).toHaveValue(/createGuessEnv/);
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
  await page.getByTestId('start-training').click();
  try {
    await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '1', { timeout: 400_000 });
  } catch (e) {
    const status = await page.getByTestId('run-status').textContent();
    const notices = await page
      .getByTestId('notices')
      .textContent()
      .catch(() => '');
    throw new Error(`${(e as Error).message}\nrun status: ${status}\nnotices: ${notices}\nconsole errors: ${consoleErrors.join(' | ')}`);
  }
  await waitForStatus(page, 'done');
  expect(errors).toEqual([]);
});
