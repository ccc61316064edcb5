// The one place that chooses how Chromium is launched for WebGPU (the e2e suite through playwright.config.ts,
// bench:browser, bench:dispatch): which binary, and which flags.
// The usual WebGPU flags (--enable-unsafe-webgpu --enable-features=Vulkan) silently give SwiftShader even on
// a GPU machine; ANGLE on Vulkan without a surface (--use-angle=vulkan --disable-vulkan-surface) gives the
// real adapter there (measured on H100 and H200 machines).
// GPU flags are chosen, in this order:
//   1. E2E_GPU=1 / E2E_GPU=0 (or MARFT_GPU=swiftshader) forces them on / off;
//   2. CHROME_GPU_FLAGS is set (the device pack's env.sh exports it): those flags, as they are;
//   3. a hardware Vulkan driver manifest is installed (src/gpu/node.ts hardwareIcds: e.g. the NVIDIA one at
//      /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json on the GPU machine) and a GPU device node exists
//      (/dev/nvidia*, /dev/dri/renderD*): apt's chromium brings Mesa's Intel and Radeon manifests to machines
//      without either GPU, where the GPU flags left the page hanging at start now and then.
// Otherwise the SwiftShader flags. The flags only ask for the GPU: which adapter came is what the page's
// requestAdapter() says, and a benchmark labels its figures by that (adapterLabel), never by the flags.
// The binary: $CHROME (the device pack's env.sh), else $CHROMIUM_PATH, else Debian's /usr/bin/chromium.

import { existsSync, readdirSync } from 'node:fs';
import type { AdapterSummary } from '../src/gpu/gpu.ts';
import { hardwareIcds } from '../src/gpu/node.ts';
import { isSoftwareAdapter } from '../src/ui/gpu-estimate.ts';

const CHROMIUM_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** Flags for every launch: WebGPU on, nothing fetched from the network at start. */
const BASE_FLAGS = [
  '--no-sandbox',
  '--enable-unsafe-webgpu',
  '--enable-features=Vulkan',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];
/**
 * What the GPU takes besides: the same as the device pack's CHROME_GPU_FLAGS. --enable-webgpu-developer-features
 * fills adapter.info (vendor, description) and keeps GPU timestamps unrounded.
 */
export const GPU_FLAGS = [
  '--use-angle=vulkan',
  '--disable-vulkan-surface',
  '--disable-dev-shm-usage',
  '--enable-webgpu-developer-features',
];

export interface ChromiumLaunch {
  /** undefined: Playwright's own browser (none is installed here: the launch then fails with its hint). */
  executablePath: string | undefined;
  args: string[];
  /** Whether the GPU flags were chosen (not whether a GPU adapter came). */
  gpuFlags: boolean;
  /** Why, in words, for the benchmark's log. */
  reason: string;
}

export interface LaunchProbe {
  hardwareIcds: () => string[];
  gpuDevices: () => string[];
  exists: (path: string) => boolean;
}

/** GPU device nodes: NVIDIA's, and the DRM render nodes Mesa's drivers open. */
function gpuDevices(): string[] {
  const list = (dir: string, re: RegExp) =>
    existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => re.test(f))
          .map((f) => `${dir}/${f}`)
      : [];
  return [...list('/dev', /^nvidia\d+$/), ...list('/dev/dri', /^renderD\d+$/)];
}
const SYSTEM: LaunchProbe = { hardwareIcds, gpuDevices, exists: existsSync };

export function findChromium(env: NodeJS.ProcessEnv = process.env, probe: LaunchProbe = SYSTEM): string | null {
  for (const p of [env.CHROME, env.CHROMIUM_PATH]) if (p && probe.exists(p)) return p;
  return CHROMIUM_CANDIDATES.find((p) => probe.exists(p)) ?? null;
}

function chooseGpu(env: NodeJS.ProcessEnv, probe: LaunchProbe): { gpu: boolean; reason: string } {
  if (env.E2E_GPU === '1') return { gpu: true, reason: 'E2E_GPU=1' };
  if (env.E2E_GPU === '0') return { gpu: false, reason: 'E2E_GPU=0' };
  if (env.MARFT_GPU === 'swiftshader') return { gpu: false, reason: 'MARFT_GPU=swiftshader' };
  if (env.CHROME_GPU_FLAGS?.trim()) return { gpu: true, reason: "CHROME_GPU_FLAGS is set (the device pack's env.sh)" };
  const icds = probe.hardwareIcds();
  if (!icds.length) return { gpu: false, reason: 'no hardware Vulkan driver: SwiftShader' };
  const devices = probe.gpuDevices();
  if (!devices.length) return { gpu: false, reason: `Vulkan driver manifests (${icds.join(', ')}) but no GPU device node: SwiftShader` };
  return { gpu: true, reason: `hardware Vulkan driver: ${icds.join(', ')}; GPU ${devices.join(', ')}` };
}

/**
 * How to launch Chromium here: binary and flags, with the reason for the flags. `developerFeatures` adds
 * --enable-webgpu-developer-features on SwiftShader too (the benchmarks: GPU timestamps not rounded to 0.1 ms).
 */
export function chromiumLaunch(
  env: NodeJS.ProcessEnv = process.env,
  probe: LaunchProbe = SYSTEM,
  opts: { developerFeatures?: boolean } = {},
): ChromiumLaunch {
  const { gpu, reason } = chooseGpu(env, probe);
  const fromEnv = env.CHROME_GPU_FLAGS?.trim().split(/\s+/) ?? [];
  const gpuArgs = fromEnv.length ? fromEnv : GPU_FLAGS;
  const dev = opts.developerFeatures ? ['--enable-webgpu-developer-features'] : [];
  const args = [...new Set([...BASE_FLAGS, ...(gpu ? gpuArgs : []), ...dev])];
  return { executablePath: findChromium(env, probe) ?? undefined, args, gpuFlags: gpu, reason };
}

/** The chosen flags alone (playwright.config.ts). */
export function chromiumWebgpuArgs(env: NodeJS.ProcessEnv = process.env): string[] {
  return chromiumLaunch(env).args;
}

/**
 * The label a browser figure carries, from the adapter the lab's engine got (its gpu-status data-adapter):
 * 'GPU (vendor description)' only for a hardware adapter. A fallback adapter, or one whose name says
 * SwiftShader (also under the GPU flags, e.g. with the SwiftShader driver), is 'SwiftShader (CPU)', by the
 * lab's own test (isSoftwareAdapter); no adapter at all is 'no adapter'.
 */
export function adapterLabel(a: AdapterSummary | null): { kind: 'gpu' | 'software' | 'none'; label: string } {
  if (!a) return { kind: 'none', label: 'no adapter' };
  const name = [a.vendor, a.architecture, a.description].filter(Boolean).join(' ');
  if (isSoftwareAdapter(a)) return { kind: 'software', label: `SwiftShader (CPU${name ? `: ${name}` : ''})` };
  return { kind: 'gpu', label: `GPU (${name || 'unnamed adapter'})` };
}
