// Per-agent ONNX export end to end (Chromium, SwiftShader WebGPU): import a checkpoint of the duo team
// (fixtures/onnx-e2e/checkpoint.zip: random adapters on the built-in model, so no minutes-long training
// iteration; scripts/fixtures/make_onnx_checkpoint.ts writes it), export the solver from the Runs tab,
// run the downloaded .onnx on the page in onnxruntime-web's WebGPU execution provider (the runtime and its
// WebAssembly served by the app itself: no request off localhost, no CSP violation), and compare its
// logits with the lab's own: the worker's decoder with the solver's adapter of the same checkpoint,
// unmerged, through the LoRA kernels.

import { mkdirSync, readFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { unzipSync } from 'fflate';
import { SHOTS, openLab } from './helpers.ts';

test.setTimeout(120_000);

const FIXTURE = new URL('../fixtures/onnx-e2e/checkpoint.zip', import.meta.url).pathname;
const LOCAL = new Set(['127.0.0.1', 'localhost', '[::1]']);

interface Check {
  err: number;
  errWasm: number;
  adapterEffect: number;
  dims: number[];
  adapter: string | null;
  msGpu: number;
  msWasm: number;
}

test("an agent exported as ONNX runs in onnxruntime-web on WebGPU with the lab's logits", async ({ page, context }) => {
  const offsite: string[] = [];
  context.on('request', (r) => {
    const u = new URL(r.url());
    if (u.protocol !== 'data:' && u.protocol !== 'blob:' && !LOCAL.has(u.hostname)) offsite.push(r.url());
  });
  await page.addInitScript(() => {
    const w = window as unknown as { __csp: string[] };
    w.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => w.__csp.push(`${e.violatedDirective}: ${e.blockedURI}`));
  });
  const errors: string[] = [];
  await openLab(page, errors);

  // the checkpoint comes in through the Runs tab's import, as a new run
  await page.getByTestId('tab-runs').click();
  await page.getByTestId('import-checkpoint').setInputFiles(FIXTURE);
  await expect(page.getByTestId('notice-IMPORTED')).toBeVisible({ timeout: 30_000 });
  const row = page.getByTestId('runs-table').locator('tr').first();
  await expect(row).toContainText('planner → solver');
  const runId = (await row.getAttribute('data-testid'))!.replace(/^run-/, '');

  // the solver of its latest checkpoint as an ONNX zip
  const downloading = page.waitForEvent('download', { timeout: 60_000 });
  await row.getByTestId('export-onnx-solver').click();
  const status = row.getByTestId('onnx-export-status');
  await expect(status).toHaveAttribute('data-state', /^(done|error)$/, { timeout: 60_000 });
  if ((await status.getAttribute('data-state')) === 'error')
    throw new Error(`the export failed: ${await page.getByTestId('notices').textContent()}`);
  const download = await downloading;
  expect(download.suggestedFilename()).toBe(`marft-onnx-${runId}-solver-it0.zip`);
  await expect(status).toContainText('adapter merged');
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}/onnx-export.png`, fullPage: true });
  const bytes = readFileSync(await download.path());
  const names = Object.keys(unzipSync(new Uint8Array(bytes))).sort();
  expect(names).toEqual(['README.md', 'generation_config.json', 'solver.onnx', 'tokenizer.json', 'tokenizer_config.json']);

  // the downloaded zip goes back to the page from its own origin; onnxruntime-web runs it there
  await page.route('**/e2e-onnx-export.zip', (r) => r.fulfill({ body: bytes, contentType: 'application/zip' }));
  const ids = Array.from({ length: 24 }, (_, i) => (i * 37 + 11) % 512);
  const check = await page.evaluate(
    async ({ runId, ids }): Promise<Check> => {
      type R<T> = { ok: true; value: T } | { ok: false; error: { code: string; message: string } };
      type Run = { logits: Float32Array; dims: number[]; adapter: string | null; ms: number };
      type Lab = {
        agentLogits(runId: string, role: string, ids: number[]): Promise<R<{ logits: Float32Array; vocabSize: number }>>;
        runOnnx(zip: Uint8Array, ids: number[], ep: 'webgpu' | 'wasm'): Promise<Run>;
      };
      const lab = (globalThis as unknown as { marftLab: Lab }).marftLab;
      const value = <T>(r: R<T>): T => {
        if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
        return r.value;
      };
      const maxAbs = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
      const zip = new Uint8Array(await (await fetch('/e2e-onnx-export.zip')).arrayBuffer());
      const solver = value(await lab.agentLogits(runId, 'solver', ids)).logits;
      const planner = value(await lab.agentLogits(runId, 'planner', ids)).logits;
      const gpu = await lab.runOnnx(zip, ids, 'webgpu');
      const wasm = await lab.runOnnx(zip, ids, 'wasm');
      return {
        err: maxAbs(gpu.logits, solver),
        errWasm: maxAbs(wasm.logits, solver),
        adapterEffect: maxAbs(solver, planner),
        dims: gpu.dims,
        adapter: gpu.adapter,
        msGpu: gpu.ms,
        msWasm: wasm.ms,
      };
    },
    { runId, ids },
  );
  console.log(
    `solver.onnx in onnxruntime-web, WebGPU EP on ${check.adapter} (${check.msGpu.toFixed(0)} ms): max |onnx - lab| = ${check.err.toExponential(2)}; ` +
      `wasm EP (${check.msWasm.toFixed(0)} ms): ${check.errWasm.toExponential(2)}; the solver's and the planner's logits differ by up to ${check.adapterEffect.toFixed(3)}`,
  );
  expect(check.dims).toEqual([1, ids.length, 512]);
  expect(check.adapter).toMatch(/swiftshader|google|nvidia|amd|intel|apple/i); // it ran on a WebGPU adapter
  expect(check.err).toBeLessThanOrEqual(1e-3);
  expect(check.errWasm).toBeLessThanOrEqual(1e-3);
  expect(check.adapterEffect).toBeGreaterThan(0.05); // the agents' adapters matter, so the check sees the merge

  const violations = await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp);
  expect(offsite, `requests off localhost:\n${offsite.join('\n')}`).toEqual([]);
  expect(violations, 'CSP violations').toEqual([]);
  expect(errors).toEqual([]);
});
