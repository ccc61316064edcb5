// What the page says about the device before a run: what a browser needs for WebGPU, whether the adapter
// is a software one (SwiftShader, llvmpipe: the "GPU" is the CPU), and a rough time per iteration for the
// builder's config (src/config/estimate.ts, which the CLI's run plan shares).

import type { ProbeResult } from '../worker/api.ts';

/** What to use where WebGPU is missing (shown with the NO_WEBGPU / NO_ADAPTER error). */
export const WEBGPU_BROWSERS: readonly string[] = [
  'Chrome or Edge 113+ on Windows, macOS and ChromeOS (WebGPU is on by default).',
  'Chrome on Linux: start it with --enable-unsafe-webgpu --enable-features=Vulkan, or turn on chrome://flags/#enable-unsafe-webgpu and #enable-vulkan.',
  'Chrome 121+ on Android 12+ with a recent GPU.',
  'Firefox 141+ on Windows; elsewhere Firefox Nightly with dom.webgpu.enabled in about:config.',
  'Safari 26+ on macOS, iOS and iPadOS.',
  'Open the lab over http://localhost or https:// (WebGPU needs a secure context), and check chrome://gpu if the GPU is blocklisted.',
];

const SOFTWARE = /swiftshader|llvmpipe|lavapipe|softpipe|software|basic render/i;

/** Whether the adapter runs on the CPU (a fallback adapter, or a software rasteriser by name). */
export function isSoftwareAdapter(a: ProbeResult['adapter']): boolean {
  return a.isFallback || SOFTWARE.test(`${a.vendor} ${a.architecture} ${a.device} ${a.description}`);
}

export { DISPATCHES_PER_LAYER, type IterationEstimate, type ModelDims, PROMPT_TOKENS, estimateIteration } from '../config/estimate.ts';
