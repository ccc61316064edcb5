// Interruptions in the browser: the tab reloaded inside each phase of an iteration, and the
// engine's worker dying (closed as the browser would kill it, which fires no event, or crashing in each
// phase). Each time the run is kept at its last checkpoint in the browser's storage and training goes on
// from there to the end; the dead worker is found by the page's watch (src/worker/client.ts) and named in
// a banner with a restart. A practitioner's path: Stop, then Continue trains the same run on; a reload
// mid-training, then the Train tab offers the interrupted run and continues it to the end.

import { type Page, expect, test } from '@playwright/test';
import { SHOTS, openLab, tinySettings, waitForStatus } from './helpers.ts';

async function startTiny(page: import('@playwright/test').Page, iterations: number): Promise<void> {
  await openLab(page);
  await page.getByTestId('preset-select').selectOption('duo');
  await tinySettings(page, iterations);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.getByTestId('start-training').click();
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '1', { timeout: 240_000 });
}

type Lab = {
  holdWorker(point: string, iteration?: number): Promise<void>;
  runHistory(runId: string): Promise<{ ok: true; value: Array<Record<string, unknown>> } | { ok: false; error: { message: string } }>;
};

/** A run's metric history without its timings (wall seconds, tokens per second), which differ run to run. */
async function history(page: Page, runId: string): Promise<Array<Record<string, unknown>>> {
  const r = await page.evaluate((id) => (globalThis as unknown as { marftLab: Lab }).marftLab.runHistory(id), runId);
  if (!r.ok) throw new Error(`reading the history of ${runId}: ${r.error.message}`);
  return r.value.map(({ seconds: _s, tokensPerSecond: _t, ...rest }) => rest);
}

/** A run folder as the page's origin-private file system has it: its entries and what `latest` names. */
async function runFolder(page: Page, runId: string): Promise<{ entries: string[]; latest: string }> {
  return page.evaluate(async (id) => {
    const dir = await (await (await navigator.storage.getDirectory()).getDirectoryHandle('runs')).getDirectoryHandle(id);
    const entries: string[] = [];
    for await (const name of (dir as unknown as { keys(): AsyncIterable<string> }).keys()) entries.push(name);
    const latest = (await (await (await dir.getFileHandle('latest')).getFile()).text()).trim();
    return { entries: entries.sort(), latest };
  }, runId);
}

/**
 * Arms the worker's hold at `phase` (of the progress event naming `iteration`) and sets it going with
 * `start`; then polls the page until the worker holds there. It fails with what the page shows if the run
 * errs or loses its worker first, or after `timeout` ms: each poll is a short page call, so nothing here
 * waits unbounded on a promise that may never settle.
 */
async function holdAt(
  page: Page,
  phase: string,
  iteration: number,
  start: () => Promise<void>,
  errors: string[],
  timeout = 180_000,
): Promise<void> {
  await page.evaluate(
    ([p, it]) => {
      const body = document.body.dataset;
      delete body.held;
      delete body.holdError;
      (globalThis as unknown as { marftLab: Lab }).marftLab.holdWorker(p, it).then(
        () => {
          body.held = p;
        },
        (e: unknown) => {
          body.holdError = String(e);
        },
      );
    },
    [phase, iteration] as const,
  );
  await start();
  const deadline = Date.now() + timeout;
  for (;;) {
    const s = await page.evaluate(() => ({
      held: document.body.dataset.held ?? null,
      holdError: document.body.dataset.holdError ?? null,
      state: document.querySelector('[data-testid="run-status"]')?.getAttribute('data-state') ?? null,
      status: document.querySelector('[data-testid="run-status"]')?.textContent ?? '',
      gone: document.querySelector('[data-testid="engine-gone"]')?.textContent ?? null,
      alerts: [...document.querySelectorAll('[role="alert"]')].map((e) => e.textContent ?? ''),
    }));
    if (s.held === phase) return;
    const why =
      s.holdError !== null
        ? `holdWorker failed: ${s.holdError}`
        : s.gone !== null
          ? `the engine worker is gone: ${s.gone}`
          : s.state === 'error'
            ? 'the run failed'
            : Date.now() > deadline
              ? `no hold within ${timeout / 1000} s`
              : null;
    if (why !== null) {
      throw new Error(
        `waiting for the worker to hold in the ${phase} phase: ${why}; run status '${s.status}'; alerts: ${JSON.stringify(s.alerts)}; page errors: ${JSON.stringify(errors)}`,
      );
    }
    await page.waitForTimeout(250);
  }
}

/** The tab reloaded; the run is listed at iteration `kept` and, resumed, paused there with `kept` points. */
async function reloadAndResume(page: Page, kept: number): Promise<void> {
  await page.reload();
  await expect(page.getByTestId('gpu-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.getByTestId('tab-runs').click();
  const row = page.getByTestId('runs-table').locator('tr').first();
  await expect(row).toContainText(new RegExp(`iteration ${kept}(?!\\d)`));
  await row.getByTestId('resume-run').click();
  await waitForStatus(page, 'paused', 60_000);
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', String(kept));
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', String(kept));
}

test("a tab reloaded in each phase of an iteration: the run is kept at its last checkpoint each time, and its history equals an uninterrupted run's", async ({
  page,
}) => {
  test.setTimeout(420_000);
  const errors: string[] = [];
  await openLab(page, errors);
  await page.getByTestId('preset-select').selectOption('duo');
  await tinySettings(page, 2);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  const train = page.getByTestId('start-training');
  const runIdOfRow = async () =>
    (await page.getByTestId('runs-table').locator('tr').first().getAttribute('data-testid'))!.replace(/^run-/, '');

  // the reference: the same config (and seed) trained without interruption
  await train.click();
  await waitForStatus(page, 'done', 300_000);
  await page.getByTestId('tab-runs').click();
  const reference = await runIdOfRow();

  // then a new run of it, the tab reloaded while the worker waits inside each phase (the hold: src/worker/test-hooks.ts):
  // [phase, iteration its progress event names, iterations kept at the reload]. Iteration 0 is cut in each of its
  // phases in turn (the cheapest order: each reload costs the phases before it); then the run's last checkpoint
  // (iteration 2's state, written at the end, after the run shows done: the cadence, every 10 iterations, asks for
  // none between) is cut mid-write, after its first file went into the checkpoint's temporary folder: the run is
  // back at the start's checkpoint (iteration 0).
  const holds: Array<[string, number, number]> = [
    ['rollout', 0, 0],
    ['score', 0, 0],
    ['advantages', 0, 0],
    ['update', 0, 0],
    ['checkpoint', 2, 0],
  ];
  for (const [phase, iteration, kept] of holds) {
    await test.step(`the tab reloaded in the ${phase} phase`, async () => {
      await holdAt(page, phase, iteration, () => train.click(), errors);
      // the last checkpoint is written after the run shows done: the control bar says it is saving
      await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', phase === 'checkpoint' ? 'done' : 'running');
      if (phase === 'checkpoint') {
        await expect(page.getByTestId('last-checkpoint')).toHaveAttribute('data-saving', 'true');
        // cut mid-write: the new checkpoint is only a temporary folder, and `latest` still names the last complete one
        await page.getByTestId('tab-runs').click();
        const f = await runFolder(page, await runIdOfRow());
        expect(f.entries.filter((e) => e.startsWith('.tmp-'))).toHaveLength(1);
        expect(f.latest).toMatch(/^ckpt-0+$/);
      }
      await reloadAndResume(page, kept);
    });
  }
  await train.click();
  await waitForStatus(page, 'done', 300_000);
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '2');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '2');
  await page.getByTestId('tab-runs').click();
  const interrupted = await runIdOfRow();
  expect(interrupted).not.toBe(reference);
  expect((await runFolder(page, interrupted)).entries.filter((e) => e.startsWith('.tmp-'))).toEqual([]); // the next save cleared it
  const rows = await history(page, interrupted);
  expect(rows.map((r) => r.iteration)).toEqual([0, 1]); // one row per iteration, none lost or repeated
  expect(rows).toEqual(await history(page, reference)); // the same numbers: the RNG and the weights continued exactly
  expect(errors).toEqual([]);
});

test('a dead engine worker: a banner says so within seconds, and Restart reopens the run and trains it to the end', async ({ page }) => {
  test.setTimeout(480_000);
  const errors: string[] = [];
  await startTiny(page, 3);
  await page.evaluate(() => (globalThis as unknown as { marftLab: { crashWorker(): Promise<void> } }).marftLab.crashWorker());
  const banner = page.getByTestId('engine-gone');
  await expect(banner).toBeVisible({ timeout: 120_000 });
  await expect(banner).toContainText(/stopped.*has not answered for \d+ s/s);
  await expect(banner).toContainText('Runs and checkpoints are kept');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'error');
  await page.screenshot({ path: `${SHOTS}/engine-gone.png`, fullPage: true });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.getByTestId('restart-engine').click();
  await expect(banner).toBeHidden({ timeout: 120_000 });
  await waitForStatus(page, 'done', 300_000);
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '3');
  expect(errors).toEqual([]);
});

test('the engine worker dying in each phase of an iteration: each time the banner, Restart, and training goes on to the end', async ({
  page,
}) => {
  test.setTimeout(600_000);
  const crash = (phase?: string) =>
    page.evaluate(
      (p) => (globalThis as unknown as { marftLab: { crashWorker(p?: string): Promise<void> } }).marftLab.crashWorker(p),
      phase,
    );
  await openLab(page);
  await page.getByTestId('preset-select').selectOption('duo');
  await tinySettings(page, 3);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  const banner = page.getByTestId('engine-gone');
  // armed on the worker in use; after a restart the run goes on while the next phase is armed on the new one
  // (the checkpoint phase last: a worker dying in a new run's very first save leaves nothing to resume from)
  for (const [i, phase] of ['rollout', 'score', 'advantages', 'update', 'checkpoint'].entries()) {
    await crash(phase);
    if (i === 0) await page.getByTestId('start-training').click();
    await expect(banner).toBeVisible({ timeout: 180_000 });
    await expect(banner).toContainText(`crashed in the ${phase} phase`);
    await page.getByTestId('restart-engine').click();
    await expect(banner).toBeHidden({ timeout: 120_000 });
  }
  await waitForStatus(page, 'done', 400_000);
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '3');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-iteration', '3');
});

test('after Stop, Continue trains the same run on; after a reload mid-training, the Train tab offers the run and continues it', async ({
  page,
}) => {
  test.setTimeout(600_000);
  const errors: string[] = [];
  await startTiny(page, 3); // one iteration done, the second in flight
  page.on('pageerror', (e) => errors.push(e.message));
  const status = page.getByTestId('run-status');
  const runId = (await status.textContent())!.split(' · ')[1];
  expect(runId).toMatch(/\S/);

  // Stop: the run stays loaded at its last completed iteration, and Continue (as the status text promises) trains it on
  await page.getByTestId('stop-training').click();
  await waitForStatus(page, 'stopped', 120_000);
  const train = page.getByTestId('start-training');
  await expect(train).toHaveText('Continue ▶');
  await expect(page.getByTestId('new-run')).toBeVisible();
  await page.screenshot({ path: `${SHOTS}/stopped-continue.png`, fullPage: true });
  await train.click();
  await expect(status).toHaveAttribute('data-state', 'running');
  await expect(status).toContainText(runId);
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '2', { timeout: 300_000 });
  await expect(status).toContainText(runId); // the same run, not a new one

  // a reload while the third iteration trains: the Train tab offers the run at its last checkpoint
  await expect(status).toHaveAttribute('data-state', 'running');
  await page.reload();
  await expect(page.getByTestId('gpu-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.getByTestId('tab-train').click();
  const offer = page.getByTestId('train-interrupted');
  await expect(offer).toBeVisible({ timeout: 30_000 });
  await expect(offer).toContainText(`Run ${runId} was training when the page was closed or reloaded`);
  // the Stop saved iteration 1; the cadence (every 10 iterations or 60 s) may have saved iteration 2 since
  await expect(offer).toContainText(/\(iteration [12]\)/);
  await expect(page.getByTestId('train-empty')).toHaveCount(0);
  await page.screenshot({ path: `${SHOTS}/train-interrupted.png`, fullPage: true });
  await offer.getByTestId('continue-interrupted').click();
  await expect(offer).toHaveCount(0);
  await waitForStatus(page, 'done', 300_000);
  await expect(status).toContainText(runId);
  await expect(page.getByTestId('reward-chart')).toHaveAttribute('data-points', '3');
  await expect(status).toHaveAttribute('data-iteration', '3');

  // finished: a reload offers nothing
  await page.reload();
  await expect(page.getByTestId('gpu-status')).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await page.getByTestId('tab-train').click();
  await expect(page.getByTestId('train-empty')).toBeVisible();
  await expect(page.getByTestId('train-interrupted')).toHaveCount(0);
  expect(errors).toEqual([]);
});
