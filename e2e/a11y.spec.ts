// Accessibility and the library-backed views (issue 17 item 6): axe-core on every tab fails on serious or
// critical violations; the tabs follow the ARIA tabs pattern; the React Flow graph shows every edge of the
// trio (3) and quartet (6) presets with no node outside the view; the uPlot chart shows a saved run's curve
// as an overlay with a hover value and a screen-reader summary. Screenshots of the new graph and chart.

import AxeBuilder from '@axe-core/playwright';
import { type Page, expect, test } from '@playwright/test';
import { SHOTS, openLab } from './helpers.ts';

async function seriousViolations(page: Page): Promise<string[]> {
  const r = await new AxeBuilder({ page }).analyze();
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
}

test('every tab passes axe, the graph shows every edge, the chart overlays a saved run with hover values', async ({ page }) => {
  test.setTimeout(240_000);
  const errors: string[] = [];
  await openLab(page, errors);

  // tabs: roles, one tab stop, arrow keys
  await expect(page.getByRole('tablist')).toBeVisible();
  await page.getByTestId('tab-build').focus();
  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('tab-train')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('tab-train')).toBeFocused();
  await expect(page.getByRole('tabpanel', { name: 'Train' })).toBeVisible();
  await page.keyboard.press('End');
  await expect(page.getByTestId('tab-runs')).toHaveAttribute('aria-selected', 'true');
  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('tab-build')).toHaveAttribute('aria-selected', 'true');

  // the graph: every edge of trio and quartet drawn, every node inside the view
  const graph = page.getByTestId('graph-editor');
  for (const [preset, n, agents] of [['trio', 3, 3], ['quartet', 6, 4]] as const) {
    await page.getByTestId('preset-select').selectOption(preset);
    await expect(graph.locator('.react-flow__edge')).toHaveCount(n);
    await expect(graph.locator('[data-testid^="agent-node-"]')).toHaveCount(agents);
    await page.getByRole('button', { name: 'Fit View' }).click();
    const box = (await graph.boundingBox())!;
    for (const node of await graph.locator('[data-testid^="agent-node-"]').all()) {
      const b = (await node.boundingBox())!;
      expect(b.x >= box.x && b.y >= box.y && b.x + b.width <= box.x + box.width && b.y + b.height <= box.y + box.height).toBe(true);
    }
    for (const path of await graph.locator('.react-flow__edge path.react-flow__edge-path').all()) {
      const b = (await path.boundingBox())!;
      expect(b.width + b.height).toBeGreaterThan(10);
      expect(b.y).toBeGreaterThanOrEqual(box.y - 1);
    }
  }
  await graph.screenshot({ path: `${SHOTS}/graph-editor.png` });

  // keyboard: connect via the form, select the new edge with Tab + Enter, delete it
  const edges = page.locator('.edge-list li');
  await page.getByTestId('preset-select').selectOption('duo');
  await expect(edges).toHaveCount(1);
  await page.getByTestId('add-agent').click();
  await page.getByTestId('connect-from').selectOption('solver');
  await page.getByTestId('connect-to').selectOption('agent_3');
  await page.getByTestId('connect-submit').press('Enter');
  await expect(edges).toHaveCount(2);
  const newEdge = graph.getByRole('group', { name: /edge solver to agent_3/ });
  await newEdge.focus();
  await page.keyboard.press('Enter');
  await page.keyboard.press('Delete');
  await expect(edges).toHaveCount(1);
  await page.getByTestId('undo').click();
  await expect(edges).toHaveCount(2);

  expect(await seriousViolations(page)).toEqual([]);

  // Runs: import a checkpoint zip, overlay it on the charts
  await page.getByTestId('tab-runs').click();
  await page.getByTestId('import-checkpoint').setInputFiles('fixtures/resume-v1/action.zip');
  const row = page.locator('[data-testid^="run-import-"]').first();
  await expect(row).toBeVisible({ timeout: 30_000 });
  expect(await seriousViolations(page)).toEqual([]);
  await row.getByTestId('overlay-run').check();

  await page.getByTestId('tab-train').click();
  const chart = page.getByTestId('reward-chart');
  await expect(chart.locator('.u-series', { hasText: 'import-' }).first()).toBeVisible();
  const plot = chart.locator('.u-over');
  const pb = (await plot.boundingBox())!;
  await page.mouse.move(pb.x + pb.width / 2, pb.y + pb.height / 2);
  await expect(chart.locator('.u-series', { hasText: 'import-' }).first().locator('.u-value')).toHaveText(/^-?\d/);
  await expect(chart.locator('table.sr-only tbody tr').first()).toBeAttached();
  await page.getByTestId('chart-smoothing').fill('0.6');
  await page.getByTestId('entropy-chart-log').check();
  await chart.screenshot({ path: `${SHOTS}/chart-overlay.png` });
  await page.getByTestId('entropy-chart-log').uncheck();
  expect(await seriousViolations(page)).toEqual([]);

  // Runs: a CLI run's training log (a learning-matrix row) overlaid beside it; a file that is not one is refused
  await page.getByTestId('tab-runs').click();
  await page.getByTestId('overlay-log').setInputFiles('bench/results/matrix/seed1-batch2/team-trio-s1.jsonl');
  await expect(page.getByTestId('overlaid-logs')).toContainText('log: team-trio-s1.jsonl (18 iterations)');
  await page.getByTestId('overlay-log').setInputFiles({ name: 'notes.jsonl', mimeType: 'application/json', buffer: Buffer.from('{"hello": 1}\n') });
  await expect(page.getByTestId('notice-LOG_INVALID')).toContainText('notes.jsonl');
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByTestId('tab-train').click();
  await expect(chart.locator('.u-series', { hasText: 'log: team-trio-s1.jsonl' }).first()).toBeVisible();
  await chart.screenshot({ path: `${SHOTS}/chart-overlay-log.png` });

  await page.getByTestId('tab-inspect').click();
  expect(await seriousViolations(page)).toEqual([]);
  expect(errors).toEqual([]);
});
