// The config lifecycle in Chromium, along a user's click path: add an agent and type "solver2" into its
// role key by key (the real solver keeps its edges: a rename once lost them), undo and redo, reload and find
// the builder kept, export the run-config JSON and import it back (and a bad file, with its issues
// listed), open a share link, pick a preset run; the software adapter (SwiftShader) said as such with an
// estimated time per iteration and the config's memory plan; no favicon 404; a paused run's config read-only with "edit a copy".

import { mkdirSync, readFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { SHOTS, openLab, tinySettings, waitForStatus } from './helpers.ts';

test.setTimeout(600_000);

test('rename, undo, reload, export/import, share link, presets, help and the device note', async ({ page }) => {
  mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1360, height: 1000 });
  const notFound: string[] = [];
  page.on('response', (r) => {
    if (r.status() === 404) notFound.push(r.url());
  });
  const errors: string[] = [];
  await openLab(page, errors);
  const graph = page.getByTestId('graph-editor');
  const edges = page.locator('.edge-list li');

  // the software adapter is named as such, with an estimate once the model is known
  await expect(page.getByTestId('gpu-status')).toHaveAttribute('data-software', 'true');
  await expect(page.getByTestId('software-note')).toContainText('on the CPU');
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(page.getByTestId('iteration-estimate')).toContainText('Estimated time per iteration');
  // beside it, the config's memory plan from the engine
  await expect(page.getByTestId('memory-plan')).toHaveAttribute('data-fits', 'true', { timeout: 60_000 });
  await expect(page.getByTestId('memory-plan')).toContainText('Expected peak GPU memory');

  // add an agent, connect it to the solver, then type "solver2" key by key into its role
  await page.getByTestId('add-agent').click();
  await graph.getByTestId('agent-node-agent_3').click();
  await page.getByTestId('connect-agent').click();
  await graph.getByTestId('agent-node-solver').click();
  await expect(edges).toHaveText([/planner → solver/, /agent_3 → solver/]);
  await graph.getByTestId('agent-node-agent_3').click();
  const role = page.getByTestId('field-graph.agents[2].role');
  await role.fill('');
  await role.pressSequentially('solver', { delay: 30 });
  await expect(page.getByTestId('role-issue')).toContainText('"solver" is already the role of agent 2');
  await expect(edges).toHaveText([/planner → solver/, /agent_3 → solver/]); // nothing moved while typing
  await role.pressSequentially('2', { delay: 30 });
  await role.press('Enter');
  await expect(graph.getByTestId('agent-node-solver2')).toBeVisible();
  await expect(edges).toHaveText([/planner → solver/, /solver2 → solver/]);
  await expect(page.getByTestId('config-status')).toHaveAttribute('data-valid', 'true');
  await page.screenshot({ path: `${SHOTS}/config-rename.png`, fullPage: true });

  // undo (button) and redo (keyboard)
  await page.getByTestId('undo').click();
  await expect(graph.getByTestId('agent-node-agent_3')).toBeVisible();
  await expect(edges).toHaveText([/planner → solver/, /agent_3 → solver/]);
  await page.locator('h1').click();
  await page.keyboard.press('Control+Shift+Z');
  await expect(graph.getByTestId('agent-node-solver2')).toBeVisible();
  await page.getByTestId('field-iterations').fill('7');

  // every field has help; the credit settings link to the paper
  await expect(page.getByTestId('help-ppo.clip')).toHaveAttribute('title', /clip/);
  await expect(page.getByTestId('help-graph.agents[2].topP')).toHaveAttribute('title', /Nucleus/);
  await expect(page.getByTestId('paper-credit.method')).toHaveAttribute('href', 'https://arxiv.org/abs/2504.16129');

  // reload: the builder is kept
  await page.waitForTimeout(600); // the save is debounced
  await page.reload();
  await expect(page.getByTestId('gpu-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(graph.getByTestId('agent-node-solver2')).toBeVisible();
  await expect(page.getByTestId('field-iterations')).toHaveValue('7');

  // export the run-config JSON, import it back changed, and a bad file
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-config').click()]);
  expect(download.suggestedFilename()).toBe('marft-config.json');
  const exported = JSON.parse(readFileSync(await download.path(), 'utf8'));
  expect(exported.graph.agents.map((a: { role: string }) => a.role)).toEqual(['planner', 'solver', 'solver2']);
  expect(exported.iterations).toBe(7);
  exported.iterations = 9;
  await page
    .getByTestId('import-config')
    .setInputFiles({ name: 'mine.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(exported)) });
  await expect(page.getByTestId('field-iterations')).toHaveValue('9');
  await expect(page.getByTestId('notice-CONFIG_LOADED')).toContainText('mine.json');
  await page
    .getByTestId('import-config')
    .setInputFiles({ name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from('{"ppo": {"clip": 2}, "algo": "dqn"}') });
  await expect(page.getByTestId('notice-CONFIG_INVALID')).toContainText('2 problems');
  await expect(page.getByTestId('notice-CONFIG_INVALID')).toContainText('ppo.clip must be a number in (0, 1), got 2');
  await expect(page.getByTestId('field-iterations')).toHaveValue('9'); // the builder is unchanged

  // a share link opens the lab with the same config
  await page.getByTestId('share-config').click();
  const link = await page.getByTestId('share-link').inputValue();
  expect(link).toMatch(/\?config=cfg1\./);
  await page.screenshot({ path: `${SHOTS}/config-lifecycle.png`, fullPage: true });
  await page.evaluate(() => localStorage.clear());
  await page.goto(link);
  await expect(graph.getByTestId('agent-node-solver2')).toBeVisible();
  await expect(page.getByTestId('field-iterations')).toHaveValue('9');
  await expect(page.getByTestId('notice-CONFIG_LOADED')).toBeVisible();
  expect(new URL(page.url()).searchParams.has('config')).toBe(false);
  await page.waitForTimeout(600); // the save is debounced
  await page.reload(); // the link's config is now the kept builder
  await expect(graph.getByTestId('agent-node-solver2')).toBeVisible();
  await expect(page.getByTestId('field-iterations')).toHaveValue('9');

  // the preset runs are listed, each with its line
  await page.getByTestId('preset-run-select').selectOption('classroom');
  await expect(page.getByTestId('preset-run-line')).toContainText('classroom: a short, visible rise');
  await expect(page.getByTestId('field-iterations')).toHaveValue('15');

  expect(notFound).toEqual([]);
  expect(errors).toEqual([]);
});

test("a paused run's config is read-only; an edited copy is never applied to it silently", async ({ page }) => {
  await openLab(page);
  await tinySettings(page, 1);
  await page.getByTestId('field-rollout.episodes').fill('1');
  await page.getByTestId('field-all-max-new-tokens').fill('4');
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.getByTestId('step-training').click();
  await waitForStatus(page, 'paused', 300_000);
  await page.getByTestId('tab-build').click();
  await expect(page.getByTestId('run-config-locked')).toBeVisible();
  await expect(page.getByTestId('field-iterations')).toBeDisabled();
  await page.screenshot({ path: `${SHOTS}/config-readonly.png`, fullPage: true });
  await page.getByTestId('edit-copy').click();
  await expect(page.getByTestId('run-config-copy')).toContainText('New run');
  await page.getByTestId('field-iterations').fill('3');
  // Step trains the run with its own config, and says so
  await page.getByTestId('step-training').click();
  await expect(page.getByTestId('notice-CONFIG_COPY')).toContainText('not applied');
  await waitForStatus(page, 'paused', 300_000);
  await page.getByTestId('tab-build').click();
  await expect(page.getByTestId('field-iterations')).toHaveValue('3'); // the copy stays for a new run
  await page.getByTestId('back-to-run-config').click();
  await expect(page.getByTestId('field-iterations')).toHaveValue('1');
  await expect(page.getByTestId('run-config-locked')).toBeVisible();
});
