// bench:dispatch's browser side: the page bench/dispatch.ts bundles and serves; it measures dispatchCost
// on the page's own WebGPU device (?n=&reps=) and leaves the result (or the error) on window.dispatchCost.

import { acquireBrowserGpu } from '../src/gpu/browser.ts';
import { dispatchCost } from './dispatch-cost.ts';

const q = new URLSearchParams(location.search);
const w = window as unknown as { dispatchCost?: unknown };
try {
  const gpu = await acquireBrowserGpu();
  w.dispatchCost = await dispatchCost(gpu, Number(q.get('n') ?? 2000), Number(q.get('reps') ?? 5));
} catch (e) {
  w.dispatchCost = { error: (e as Error).message };
}
