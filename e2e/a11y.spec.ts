// Accessibility and the library-backed views: axe-core on every tab fails on serious or
// critical violations; the tabs follow the ARIA tabs pattern; the React Flow graph shows every edge of the
// trio (3) and quartet (6) presets with no node outside the view or under its zoom controls, fitted after
// every change of agents; the uPlot chart shows a saved run's curve as an overlay with a hover value and a
// screen-reader summary. Inspect with an episode open and the sandbox in classroom mode pass axe too, and an
// episode's tokens are one Tab stop with arrow keys inside. Screenshots of the new graph and chart.

import { readFileSync } from 'node:fs';
import AxeBuilder from '@axe-core/playwright';
import { type Page, expect, test } from '@playwright/test';
import { presetGraph } from '../src/config/presets.ts';
import { SHOTS, openLab } from './helpers.ts';

async function seriousViolations(page: Page): Promise<string[]> {
  const r = await new AxeBuilder({ page }).analyze();
  return r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} at ${v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join(', ')}`,
    );
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

  // the graph: every edge of trio and quartet drawn; after each change of agents (a preset, an added agent,
  // an import) the view fits by itself: every node inside it and none under the zoom controls
  const graph = page.getByTestId('graph-editor');
  const fitted = async (agents: number, what: string) => {
    await expect(graph.locator('[data-testid^="agent-node-"]')).toHaveCount(agents);
    await expect(async () => {
      const box = (await graph.boundingBox())!;
      const controls = (await graph.locator('.react-flow__controls').boundingBox())!;
      for (const node of await graph.locator('[data-testid^="agent-node-"]').all()) {
        const b = (await node.boundingBox())!;
        const name = await node.getAttribute('data-testid');
        expect(
          b.x >= box.x && b.y >= box.y && b.x + b.width <= box.x + box.width && b.y + b.height <= box.y + box.height,
          `${what}: ${name} inside the view`,
        ).toBe(true);
        const under =
          b.x < controls.x + controls.width &&
          controls.x < b.x + b.width &&
          b.y < controls.y + controls.height &&
          controls.y < b.y + b.height;
        expect(under, `${what}: ${name} clear of the zoom controls`).toBe(false);
      }
      for (const path of await graph.locator('.react-flow__edge path.react-flow__edge-path').all()) {
        const b = (await path.boundingBox())!;
        expect(b.width + b.height).toBeGreaterThan(10);
        expect(b.y, `${what}: edges inside the view`).toBeGreaterThanOrEqual(box.y - 1);
        expect(b.y + b.height, `${what}: edges inside the view`).toBeLessThanOrEqual(box.y + box.height + 1);
      }
    }).toPass({ timeout: 10_000 });
  };
  for (const [preset, n, agents] of [
    ['trio', 3, 3],
    ['quartet', 6, 4],
  ] as const) {
    await page.getByTestId('preset-select').selectOption(preset);
    await expect(graph.locator('.react-flow__edge')).toHaveCount(n);
    await fitted(agents, preset);
  }
  await graph.screenshot({ path: `${SHOTS}/graph-editor.png` });
  await page.getByTestId('add-agent').click();
  await fitted(5, 'quartet + an added agent');
  await graph.screenshot({ path: `${SHOTS}/graph-editor-added.png` });
  await page.getByTestId('preset-select').selectOption('duo');
  await fitted(2, 'duo');
  const quartet = JSON.parse(readFileSync('configs/classroom.json', 'utf8')) as Record<string, unknown>;
  await page.getByTestId('import-config').setInputFiles({
    name: 'team.json',
    mimeType: 'application/json',
    buffer: Buffer.from(JSON.stringify({ ...quartet, graph: presetGraph('quartet') })),
  });
  await fitted(4, 'an imported quartet');

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
  await page
    .getByTestId('overlay-log')
    .setInputFiles({ name: 'notes.jsonl', mimeType: 'application/json', buffer: Buffer.from('{"hello": 1}\n') });
  await expect(page.getByTestId('notice-LOG_INVALID')).toContainText('notes.jsonl');
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByTestId('tab-train').click();
  await expect(chart.locator('.u-series', { hasText: 'log: team-trio-s1.jsonl' }).first()).toBeVisible();
  await chart.screenshot({ path: `${SHOTS}/chart-overlay-log.png` });

  await page.getByTestId('tab-inspect').click();
  expect(await seriousViolations(page)).toEqual([]);
  expect(errors).toEqual([]);
});

test('Inspect passes axe with an episode open and in classroom mode; an episode is one Tab stop, arrow keys move inside', async ({
  page,
}) => {
  test.setTimeout(180_000);
  const errors: string[] = [];
  await openLab(page, errors);
  await page.getByTestId('tab-inspect').click();
  await page.getByTestId('open-demo-inspect').click();
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'paused', { timeout: 90_000 });
  const inspector = page.getByTestId('token-inspector');
  await inspector.getByTestId('episode-0').click();
  const col = inspector.getByTestId('episode-view-0');
  const tokens = col.getByTestId('token');
  await expect(tokens.nth(10)).toBeVisible(); // the episode's tokens render after the click
  expect(await tokens.count()).toBeGreaterThan(10);
  await inspector.getByTestId('compare-method').selectOption('step_discount');
  await expect(inspector.getByTestId('episode-view-1')).toBeVisible();
  expect(await seriousViolations(page)).toEqual([]);
  await inspector.getByTestId('color-by').selectOption('value');
  expect(await seriousViolations(page)).toEqual([]);

  // one Tab stop per column; arrows, Home and End move inside it, Enter shows the token's GAE terms
  await expect(col.locator('[data-testid="token"][tabindex="0"]')).toHaveCount(1);
  await inspector.getByTestId('episode-3').focus(); // the episode list's last entry: the next Tab stop is the column
  await page.keyboard.press('Tab');
  await expect(tokens.first()).toBeFocused();
  await page.keyboard.press('ArrowRight');
  await expect(tokens.nth(1)).toBeFocused();
  await page.keyboard.press('ArrowDown'); // the next agent's first token
  const solverFirst = col.locator('.action').nth(1).getByTestId('token').first();
  await expect(solverFirst).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(solverFirst).toHaveAttribute('aria-pressed', 'true');
  await expect(page.getByTestId('gae-detail')).toBeVisible();
  await page.keyboard.press('End');
  await expect(tokens.last()).toBeFocused();
  await page.keyboard.press('Tab'); // out of the column: the other column's one stop, not the next token
  await expect(inspector.getByTestId('episode-view-1').locator('[data-testid="token"][tabindex="0"]')).toBeFocused();
  await expect(col.locator('[data-testid="token"][tabindex="0"]')).toHaveCount(1);

  // the sandbox in classroom mode (large type) with the recorded episode and the GAE chain
  await page.getByTestId('sandbox-open').click();
  const sb = page.getByTestId('credit-sandbox');
  await sb.getByTestId('sb-source').selectOption('recorded');
  await expect(sb.getByTestId('sb-row-1')).toBeVisible();
  await sb.getByTestId('sb-classroom').check();
  await expect(sb.getByTestId('sb-chain-step')).toContainText('step 1 of 2');
  await sb.getByTestId('sb-next').click();
  expect(await seriousViolations(page)).toEqual([]);
  await sb.getByTestId('sb-level').selectOption('token');
  await sb.getByTestId('sb-method').selectOption('per_step');
  expect(await seriousViolations(page)).toEqual([]);
  await page.screenshot({ path: `${SHOTS}/classroom-axe.png`, fullPage: true });
  expect(errors).toEqual([]);
});
