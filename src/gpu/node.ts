// Device acquisition in Node through Dawn (the `webgpu` package) over Vulkan: a real GPU where a Vulkan
// driver is installed, otherwise SwiftShader (a CPU Vulkan driver that Debian's `chromium` ships).
// MARFT_GPU=swiftshader forces the CPU driver; VK_ICD_FILENAMES / VK_DRIVER_FILES set by the user win.

import { existsSync, readdirSync } from 'node:fs';
import type { Gpu } from './gpu.ts';
import { type AcquireOptions, acquireFrom } from './device.ts';
import { GpuError } from './errors.ts';

export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const ICD_DIRS = ['/usr/share/vulkan/icd.d', '/etc/vulkan/icd.d', '/usr/local/share/vulkan/icd.d', '/usr/local/nvidia/share/vulkan/icd.d'];

/** Vulkan driver manifests other than Mesa's lavapipe (too old in Debian 12 for Dawn). */
export function hardwareIcds(): string[] {
  const found: string[] = [];
  for (const dir of ICD_DIRS) {
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)) if (f.endsWith('.json') && !f.includes('lvp')) found.push(`${dir}/${f}`);
  }
  return found;
}

/** Chooses the Vulkan driver before Dawn loads, and says which. */
export function chooseVulkanDriver(env = process.env): { driver: string; reason: string } {
  if (env.VK_ICD_FILENAMES || env.VK_DRIVER_FILES) {
    return { driver: env.VK_ICD_FILENAMES || env.VK_DRIVER_FILES || '', reason: 'from the environment' };
  }
  const hw = env.MARFT_GPU === 'swiftshader' ? [] : hardwareIcds();
  const soft = existsSync(SWIFTSHADER_ICD) ? [SWIFTSHADER_ICD] : [];
  if (!hw.length && !soft.length) {
    throw new GpuError(
      'NO_ADAPTER',
      `no Vulkan GPU driver found in ${ICD_DIRS.join(', ')} and no SwiftShader at ${SWIFTSHADER_ICD}`,
      "install a Vulkan driver for your GPU, or Debian's `chromium` package (sudo apt-get install chromium) for the SwiftShader CPU fallback",
    );
  }
  // Both kinds are listed: Dawn enumerates every device and the high-performance request prefers a real
  // GPU, so a machine with driver files but no matching hardware still falls back to SwiftShader.
  if (hw.length) {
    env.VK_DRIVER_FILES = [...hw, ...soft].join(':');
    return { driver: env.VK_DRIVER_FILES, reason: 'installed Vulkan drivers, SwiftShader as fallback' };
  }
  env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  return { driver: SWIFTSHADER_ICD, reason: env.MARFT_GPU === 'swiftshader' ? 'MARFT_GPU=swiftshader' : 'no GPU driver: CPU fallback' };
}

/**
 * The Vulkan loader only honours driver variables present when the process started, so an entry point
 * (CLI, benchmark, test runner) calls this first: it returns the environment to re-run the process with,
 * or null when the current one is already right.
 */
export function vulkanEnvForChild(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv | null {
  if (env.VK_ICD_FILENAMES || env.VK_DRIVER_FILES) return null;
  const next = { ...env, XDG_RUNTIME_DIR: env.XDG_RUNTIME_DIR ?? '/tmp' };
  chooseVulkanDriver(next);
  return next;
}

/**
 * For Node entry points (CLI, benchmarks): when the Vulkan variables are missing, runs this same script
 * again as a child with them set and exits with its status; otherwise returns and the caller goes on.
 */
export async function ensureVulkanEnv(): Promise<void> {
  const env = vulkanEnvForChild();
  if (!env) return;
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], { env, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

let shared: Promise<Gpu> | null = null;

/** One device per process; the `GPU` object stays local to this module (a global one keeps Node alive). */
export function acquireNodeGpu(opts: AcquireOptions = {}): Promise<Gpu> {
  shared ??= createNodeGpu(opts);
  shared.catch(() => { shared = null; });
  return shared;
}

/**
 * A new, unshared device on a fresh Dawn instance: for a run that replaces a lost device, and for
 * fault-injection tests that destroy their own device without touching the process-wide one.
 */
export function createNodeGpu(opts: AcquireOptions = {}): Promise<Gpu> {
  return (async () => {
    process.env.XDG_RUNTIME_DIR ??= '/tmp';
    const preset = process.env.VK_ICD_FILENAMES || process.env.VK_DRIVER_FILES;
    const { driver, reason } = chooseVulkanDriver();
    const late = preset ? '' : ' (set after start: run through an entry point that calls vulkanEnvForChild)';
    let webgpu: typeof import('webgpu');
    try {
      webgpu = await import('webgpu');
    } catch (e) {
      throw new GpuError('NO_WEBGPU', `cannot load Dawn (the 'webgpu' package): ${(e as Error).message}`, 'run `npm ci` in the project root');
    }
    Object.assign(globalThis, webgpu.globals);
    const gpu = webgpu.create(['backend=vulkan']);
    let g: Gpu;
    try {
      g = await acquireFrom(gpu, opts);
    } catch (e) {
      if (e instanceof GpuError && e.code === 'NO_ADAPTER') {
        throw new GpuError('NO_ADAPTER', `Dawn found no Vulkan adapter with driver ${driver}${late}`,
          "install libvulkan1 and a Vulkan driver (or Debian's `chromium` for SwiftShader), and start the process with VK_ICD_FILENAMES set");
      }
      throw e;
    }
    g.instance = gpu;
    opts.log?.(`Vulkan driver: ${driver} (${reason})`);
    return g;
  })();
}

/** Forgets the shared device (after destroy() in fault-injection tests). */
export function resetNodeGpu(): void { shared = null; }
