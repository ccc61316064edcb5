// Try the team as a user does it: on the built-in model with no run loaded, type a
// problem and its answer, ask the team, and watch each agent's tokens stream in (the token count of the
// first agent is seen growing), then the judge's reward; a held-out task previews from the environment;
// axe finds no serious violation on the panel. Short answers (8 tokens): SwiftShader is slow.

import AxeBuilder from '@axe-core/playwright';
import { mkdirSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { SHOTS, openLab, tinySettings } from './helpers.ts';

test('type a problem, watch each agent answer in turn with streaming tokens, see the reward', async ({ page }) => {
  test.setTimeout(300_000);
  mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1360, height: 1000 });
  const errors: string[] = [];
  await openLab(page, errors);
  await page.getByTestId('preset-select').selectOption('duo');
  await tinySettings(page, 1);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 120_000 });

  await page.getByTestId('tab-try').click();
  const panel = page.getByRole('tabpanel', { name: 'Try the team' });
  await expect(panel).toBeVisible();
  await expect(panel).toContainText('the base model, untrained');

  // the token counts each agent shows, every time the transcript changes
  await page.evaluate(() => {
    const seen: Record<string, string[]> = {};
    (window as unknown as { __tryCounts: typeof seen }).__tryCounts = seen;
    const root = document.querySelector('[data-testid="try-transcript"]')!;
    new MutationObserver(() => {
      for (const li of root.querySelectorAll('[data-testid^="try-agent-"]')) {
        const role = li.getAttribute('data-testid')!.slice('try-agent-'.length);
        const n = /(\d+) tokens/.exec(li.textContent ?? '')?.[1];
        if (n && (seen[role] ??= []).at(-1) !== n) seen[role].push(n);
      }
    }).observe(root, { subtree: true, childList: true, characterData: true });
  });
  await page.getByTestId('try-problem').fill('Compute 2 + 3.');
  await page.getByTestId('try-answer').fill('5');
  await page.getByTestId('try-start').click();
  await expect(page.getByTestId('try-task')).toContainText('Compute 2 + 3.', { timeout: 60_000 });
  await expect(page.getByTestId('try-result')).toBeVisible({ timeout: 180_000 });
  await expect(page.getByTestId('try-transcript')).toHaveAttribute('data-state', 'done');

  // each agent of the duo answered, in the graph's order, its tokens streamed in (the planner's count grew)
  const agents = page.locator('[data-testid="try-turn-0"] [data-testid^="try-agent-"]');
  await expect(agents).toHaveCount(2);
  expect(await agents.evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')))).toEqual([
    'try-agent-planner',
    'try-agent-solver',
  ]);
  const counts = await page.evaluate(() => (window as unknown as { __tryCounts: Record<string, string[]> }).__tryCounts);
  expect(Object.keys(counts).sort()).toEqual(['planner', 'solver']);
  expect(counts.planner.length, `planner token counts seen: ${counts.planner}`).toBeGreaterThan(1);
  expect(counts.planner.map(Number)).toEqual([...counts.planner.map(Number)].sort((a, b) => a - b));
  for (const role of ['planner', 'solver']) expect(Number(counts[role].at(-1))).toBeGreaterThan(0);

  // the judgement: the team's reward, 1 exactly when the team's answer was right
  const reward = await page.getByTestId('try-reward').textContent();
  const correct = await page.getByTestId('try-result').getAttribute('data-correct');
  expect(reward).toBe(correct === 'true' ? '1' : '0');
  await expect(page.getByTestId('try-judgement-0')).toContainText(`judge: the answer is ${correct === 'true' ? 'correct' : 'incorrect'}`);
  await expect(page.getByTestId('try-status')).toContainText('Done');
  await page.screenshot({ path: `${SHOTS}/try-team.png`, fullPage: true });

  const axe = await new AxeBuilder({ page }).include('[data-testid="try-panel"]').analyze();
  expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help}`)).toEqual([]);

  // a held-out task of the environment, previewed before asking
  await page.getByTestId('try-source-held-out').check();
  await page.getByTestId('try-seed').fill('3');
  await expect(page.getByTestId('try-task-preview')).toContainText(/Compute .*expected answer: -?\d+/);
  expect(errors).toEqual([]);
});
