// A teacher's click path through the credit-assignment sandbox, with no training and without waiting for
// a GPU: open the lab, go to Inspect, open the sandbox, build a 2-agent episode, switch the credit method
// equal -> step_discount -> per_step and the level action -> token, and check that every advantage shown
// is what `marft inspect` gives the same episode (inspectRecorded, computed here in Node), then step the
// GAE chain in classroom mode with the keyboard. Then, with a few tiny iterations stepped: the iteration
// picker over the kept iterations, the episode in view staying while a newer iteration ends, and a recorded
// episode loaded into the sandbox.

import { mkdirSync, readFileSync } from 'node:fs';
import { type Page, expect, test } from '@playwright/test';
import { parseRunConfig } from '../src/config/run-config.ts';
import { inspectRecorded, parseRecordedEpisodes } from '../src/marft/inspect-jsonl.ts';
import { SHOTS, openLab, tinySettings } from './helpers.ts';

test.setTimeout(300_000);

const lab = JSON.parse(readFileSync('configs/lab.json', 'utf8')) as Record<string, any>;

/** What `marft inspect --config` prints for the episode the test builds, under these settings. */
function expected(level: 'action' | 'token', method: string) {
  const config = parseRunConfig({
    ...lab,
    level,
    credit: { ...lab.credit, method, discount: 0.5, perStep: { planner: 'planner', solver: 'solver' } },
    ppo: { ...lab.ppo, gamma: 0.9, lambda: 0.8 },
  });
  const planner = level === 'action' ? { value: 0.2 } : { values: [0.2, 0.2] };
  const solver = level === 'action' ? { value: 0.5 } : { values: [0.5, 0.5, 0.5] };
  const jsonl = JSON.stringify({
    id: 'e0',
    turns: [
      {
        reward: 1,
        actions: [
          { role: 'planner', tokens: 2, ...planner, text: '- add the numbers' },
          { role: 'solver', tokens: 3, ...solver, text: 'so \\boxed{4}' },
        ],
      },
    ],
  });
  return inspectRecorded(parseRecordedEpisodes(jsonl, config), config)[0];
}

/** Every advantage the sandbox shows equals the CLI's, to the 3 decimals shown. */
async function checkNumbers(page: Page, level: 'action' | 'token', method: string) {
  const line = expected(level, method);
  for (const [ai, a] of line.actions.entries()) {
    for (const [k, v] of a.advantages.entries()) await expect(page.getByTestId(`sb-adv-${ai}-${k}`)).toHaveText(v.toFixed(3));
    await expect(page.getByTestId(`sb-adv-${ai}-${a.advantages.length}`)).toHaveCount(0);
  }
}

test('a teacher builds a 2-agent episode in the credit sandbox and steps the GAE chain, with no training', async ({ page }) => {
  mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1360, height: 1000 });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('/');
  // the builder: per_step on the default duo starts from the planner's own step reward (not every role paid R)
  await page.getByTestId('field-credit.method').selectOption('per_step');
  await expect(page.getByTestId('field-credit.perStep.planner')).toHaveValue('planner');
  await expect(page.getByTestId('field-credit.perStep.solver')).toHaveValue('fallback');
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
  await page.getByTestId('field-credit.method').selectOption('equal');
  await page.getByTestId('tab-inspect').click();
  await expect(page.getByTestId('token-inspector')).toContainText('The credit sandbox works now, without training');
  await page.getByTestId('sandbox-open').click();
  const sb = page.getByTestId('credit-sandbox');
  await expect(sb).toBeVisible();

  // the episode: planner (2 tokens, V 0.2) then solver (3 tokens, V 0.5), team reward 1; γ 0.9, λ 0.8
  await sb.getByTestId('sb-level').selectOption('action');
  await sb.getByTestId('sb-method').selectOption('equal');
  await expect(sb.getByTestId('sb-role-0-0')).toHaveValue('planner');
  await expect(sb.getByTestId('sb-role-0-1')).toHaveValue('solver');
  await sb.getByTestId('sb-tokens-0-0').fill('2');
  await sb.getByTestId('sb-value-0-0').fill('0.2');
  await sb.getByTestId('sb-text-0-0').fill('- add the numbers');
  await sb.getByTestId('sb-tokens-0-1').fill('3');
  await sb.getByTestId('sb-value-0-1').fill('0.5');
  await sb.getByTestId('sb-text-0-1').fill('so \\boxed{4}');
  await sb.getByTestId('sb-reward-0').fill('1');
  await sb.getByTestId('sb-gamma').fill('0.9');
  await sb.getByTestId('sb-lambda').fill('0.8');
  await checkNumbers(page, 'action', 'equal');
  await expect(sb.getByTestId('sb-explain')).toContainText(
    "equal: each turn's team reward R goes whole to the turn's last action (solver)",
  );
  await expect(sb.getByTestId('sb-legend')).toContainText('advantage');
  await page.screenshot({ path: `${SHOTS}/credit-sandbox.png`, fullPage: true });

  await sb.getByTestId('sb-method').selectOption('step_discount');
  await sb.getByTestId('sb-discount').fill('0.5');
  await checkNumbers(page, 'action', 'step_discount');
  await expect(sb.getByTestId('sb-r-0')).toHaveText('0.500');
  await expect(sb.getByTestId('sb-explain')).toContainText('d = 0.5');

  await sb.getByTestId('sb-method').selectOption('per_step');
  // the planner's plan-step reward from the start: per_step differs from step_discount on the default duo
  await expect(sb.getByTestId('sb-helper-planner')).toHaveValue('planner');
  await expect(sb.getByTestId('sb-helper-solver')).toHaveValue('team');
  await expect(sb.getByTestId('sb-r-0')).toHaveText('0.750'); // 0.5·min(1/2, 1) + 0.5·1
  await expect(sb.getByTestId('sb-explain')).toContainText(
    'planner (helper planner): 0.5·min(plan steps/2, 1) + 0.5·R; solver (helper team): R',
  );
  // a helper that pays the environment's verdict (coop-plan's plan check) makes that verdict a control
  await expect(sb.getByTestId('sb-score-0-0')).toHaveCount(0);
  await sb.getByTestId('sb-helper-planner').selectOption('plan-check');
  await expect(sb.getByTestId('sb-r-0')).toHaveText('0.000'); // no check given: nothing to pay
  await sb.getByTestId('sb-score-0-0').fill('0.5');
  await expect(sb.getByTestId('sb-r-0')).toHaveText('0.500');
  await sb.getByTestId('sb-helper-planner').selectOption('planner');
  await expect(sb.getByTestId('sb-score-0-0')).toHaveCount(0);
  await sb.getByTestId('sb-helper-solver').selectOption('solver');
  await checkNumbers(page, 'action', 'per_step');
  await expect(sb.getByTestId('sb-r-0')).toHaveText('0.750'); // 0.5·min(1/2, 1) + 0.5·1

  await sb.getByTestId('sb-level').selectOption('token');
  await expect(sb.getByTestId('sb-values-0-0')).toHaveValue('0.2, 0.2');
  await checkNumbers(page, 'token', 'per_step');
  await expect(sb.getByTestId('sb-explain')).toContainText('token by token');

  // classroom mode: large type, the chain stepped back from the end with space and the arrows
  await sb.getByTestId('sb-classroom').check();
  await expect(sb).toHaveClass(/classroom/);
  const stepLine = sb.getByTestId('sb-chain-step');
  await expect(stepLine).toContainText('step 1 of 5');
  await expect(stepLine).toContainText('solver');
  await sb.getByTestId('sb-explain').click(); // focus off the controls: the keys step the chain
  await page.keyboard.press('Space');
  await expect(stepLine).toContainText('step 2 of 5');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await expect(stepLine).toContainText('step 4 of 5');
  await expect(stepLine).toContainText('planner');
  await page.keyboard.press('ArrowLeft');
  await expect(stepLine).toContainText('step 3 of 5');
  await expect(sb.getByTestId('sb-chain')).toContainText('A = δ + γλ·A_next');
  await sb.getByTestId('sb-chain').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/credit-sandbox-classroom.png`, fullPage: true });
  expect(errors).toEqual([]);
});

test('Inspect keeps the last iterations: the episode in view stays while a newer one ends; the picker; a recorded episode in the sandbox', async ({
  page,
}) => {
  test.setTimeout(900_000); // two iterations on SwiftShader (the CPU), shared with other work
  await page.setViewportSize({ width: 1360, height: 1000 });
  const errors: string[] = [];
  await openLab(page, errors);
  await page.getByTestId('preset-select').selectOption('duo');
  await tinySettings(page, 5);
  await page.getByTestId('field-rollout.episodes').fill('1');
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  const status = page.getByTestId('run-status');
  await page.getByTestId('step-training').click();
  await expect(status).toHaveAttribute('data-iteration', '1', { timeout: 420_000 });
  await expect(status).toHaveAttribute('data-state', 'paused');

  await page.getByTestId('tab-inspect').click();
  const inspector = page.getByTestId('token-inspector');
  await expect(inspector.getByTestId('inspect-iteration')).toHaveText('· iteration 1 of the run');
  await inspector.getByTestId('episode-0').click();
  await expect(inspector.getByTestId('episode-view-0')).toBeVisible();

  // a newer iteration ends: the episode in view stays, the header says there is a newer one
  await page.getByTestId('step-training').click();
  await expect(status).toHaveAttribute('data-iteration', '2', { timeout: 420_000 });
  await expect(inspector.getByTestId('inspect-iteration')).toHaveText('· iteration 1 of the run; newer: 2');
  await expect(inspector.getByTestId('episode-view-0')).toBeVisible();
  const picker = inspector.getByTestId('iteration-picker');
  await expect(picker.locator('option')).toHaveText(['1', '2 (newest)']);
  await page.screenshot({ path: `${SHOTS}/inspect-history.png`, fullPage: true });
  await picker.selectOption({ label: '2 (newest)' }); // by label: the values are 0-based iteration numbers
  await expect(inspector.getByTestId('inspect-iteration')).toHaveText('· iteration 2 of the run');
  await expect(inspector.getByTestId('episode-view-0')).toHaveCount(0); // moved on: pick an episode of iteration 2

  // the sandbox takes the iteration in view's episode #0 and computes it under the run's config
  await page.getByTestId('sandbox-open').click();
  const sb = page.getByTestId('credit-sandbox');
  await sb.getByTestId('sb-source').selectOption('recorded');
  await sb.getByTestId('sb-recorded').selectOption('0');
  await expect(sb.getByTestId('sb-role-0-0')).toHaveValue('planner');
  await expect(sb.getByTestId('sb-role-0-1')).toHaveValue('solver');
  await expect(sb.getByTestId('sb-row-1')).toBeVisible();
  await expect(sb.getByTestId('sb-error')).toHaveCount(0);
  expect(errors).toEqual([]);
});
