// Device acquisition in Node through Dawn (the `webgpu` package), on each OS's native backend: Metal on
// macOS, D3D12 on Windows, Vulkan elsewhere (Linux). On Linux the Vulkan loader is pointed at a driver
// before Dawn loads: a real GPU where a Vulkan driver is installed, otherwise SwiftShader (a CPU Vulkan
// driver that Debian's `chromium` ships), so test machines without a GPU still get a device.
// MARFT_GPU=swiftshader forces the CPU driver; VK_ICD_FILENAMES / VK_DRIVER_FILES set by the user win;
// MARFT_GPU_BACKEND=metal|d3d12|vulkan overrides the backend (e.g. Vulkan on Windows).
// MARFT_GPU_LIMITS=default|adapter picks the device's limits where the caller names none (the CLI's
// --limits does): 'default' runs the tests and benchmarks within WebGPU's default limits, as a laptop's.
// A device that cannot be had ends in one GpuError that names the problem and the fix for the OS.

import { existsSync, readdirSync } from 'node:fs';
import type { Gpu } from './gpu.ts';
import { type AcquireOptions, LIMITS_MODES, type LimitsMode, acquireFrom } from './device.ts';
import { messageWithoutHint } from '../common/errors.ts';
import { GpuError } from './errors.ts';

export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const ICD_DIRS = ['/usr/share/vulkan/icd.d', '/etc/vulkan/icd.d', '/usr/local/share/vulkan/icd.d', '/usr/local/nvidia/share/vulkan/icd.d'];

export type DawnBackend = 'metal' | 'd3d12' | 'vulkan';
const BACKENDS: readonly DawnBackend[] = ['metal', 'd3d12', 'vulkan'];
const API_NAME: Record<DawnBackend, string> = { metal: 'Metal', d3d12: 'Direct3D 12', vulkan: 'Vulkan' };

type Env = Record<string, string | undefined>;

/**
 * The backend Dawn is asked for on `platform`: the one its GPU drivers ship (Dawn's own default there), or
 * MARFT_GPU_BACKEND's. `vulkanLoader`: the Vulkan loader's driver variables are ours to set (Linux and the
 * other Unixes; on Windows the loader finds drivers in the registry).
 */
export function dawnBackend(platform: NodeJS.Platform, env: Env = {}): { backend: DawnBackend; api: string; vulkanLoader: boolean } {
  const forced = env.MARFT_GPU_BACKEND?.trim().toLowerCase();
  if (forced && !BACKENDS.includes(forced as DawnBackend)) {
    throw new GpuError(
      'NO_ADAPTER',
      `MARFT_GPU_BACKEND is "${env.MARFT_GPU_BACKEND}", not one of ${BACKENDS.join(', ')}`,
      `set MARFT_GPU_BACKEND to ${BACKENDS.join(', ')}, or unset it for this OS's default`,
    );
  }
  const backend = (forced as DawnBackend | undefined) ?? (platform === 'darwin' ? 'metal' : platform === 'win32' ? 'd3d12' : 'vulkan');
  return { backend, api: API_NAME[backend], vulkanLoader: backend === 'vulkan' && platform !== 'darwin' && platform !== 'win32' };
}

/** What to do on `platform` when Dawn finds no adapter on `backend`. */
export function noGpuHint(platform: NodeJS.Platform, backend: DawnBackend): string {
  const forced = `MARFT_GPU_BACKEND=${backend} is set: unset it to use this OS's default backend`;
  if (platform === 'darwin') {
    return backend === 'metal'
      ? 'marft needs Metal: macOS 11 or later on a Mac with a GPU (every Mac since 2012, Apple silicon included). A virtual machine or a remote session without GPU access has none; run marft on the Mac itself.'
      : forced;
  }
  if (platform === 'win32') {
    return backend === 'd3d12'
      ? "marft needs Direct3D 12: Windows 10 or later with a current GPU driver (from NVIDIA, AMD or Intel; Windows Update's basic display driver is not enough). In a virtual machine or over Remote Desktop, enable GPU access; or try MARFT_GPU_BACKEND=vulkan."
      : backend === 'vulkan'
        ? "Vulkan on Windows needs the GPU vendor's driver with Vulkan support; or unset MARFT_GPU_BACKEND to use Direct3D 12."
        : forced;
  }
  return backend === 'vulkan'
    ? "marft needs a Vulkan driver: install libvulkan1 and your GPU's driver (mesa-vulkan-drivers for AMD and Intel, the NVIDIA driver with its Vulkan ICD), or, for a CPU fallback that works everywhere but slowly, Debian's `chromium` package (its SwiftShader driver; sudo apt-get install chromium). Check with `vulkaninfo --summary`."
    : forced;
}

/** Vulkan driver manifests other than Mesa's lavapipe (too old in Debian 12 for Dawn). */
export function hardwareIcds(): string[] {
  const found: string[] = [];
  for (const dir of ICD_DIRS) {
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)) if (f.endsWith('.json') && !f.includes('lvp')) found.push(`${dir}/${f}`);
  }
  return found;
}

/** What chooseVulkanDriver looks at on this machine (tests pass their own). */
export interface DriverProbe {
  hardwareIcds: () => string[];
  exists: (path: string) => boolean;
}
const SYSTEM: DriverProbe = { hardwareIcds, exists: existsSync };

/**
 * Chooses the Vulkan driver before Dawn loads, and says which. Driver files named in the environment must
 * exist: the loader would otherwise find no driver and Dawn would fail with its own log lines.
 */
export function chooseVulkanDriver(env: Env = process.env, probe: DriverProbe = SYSTEM): { driver: string; reason: string } {
  const named = env.VK_ICD_FILENAMES || env.VK_DRIVER_FILES;
  if (named) {
    const variable = env.VK_ICD_FILENAMES ? 'VK_ICD_FILENAMES' : 'VK_DRIVER_FILES';
    const files = named.split(':').filter(Boolean);
    if (!files.some(probe.exists)) {
      throw new GpuError(
        'NO_ADAPTER',
        `${variable} names ${files.join(', ')}, and no such file exists`,
        `point ${variable} at an installed Vulkan driver manifest (ls ${ICD_DIRS[0]}; SwiftShader's is ${SWIFTSHADER_ICD}), or unset it and marft picks one`,
      );
    }
    return { driver: named, reason: 'from the environment' };
  }
  const hw = env.MARFT_GPU === 'swiftshader' ? [] : probe.hardwareIcds();
  const soft = probe.exists(SWIFTSHADER_ICD) ? [SWIFTSHADER_ICD] : [];
  if (!hw.length && !soft.length) {
    throw new GpuError(
      'NO_ADAPTER',
      env.MARFT_GPU === 'swiftshader'
        ? `MARFT_GPU=swiftshader, but there is no SwiftShader at ${SWIFTSHADER_ICD}`
        : `no Vulkan GPU driver found in ${ICD_DIRS.join(', ')} and no SwiftShader at ${SWIFTSHADER_ICD}`,
      noGpuHint('linux', 'vulkan'),
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
 * or null when the current one is already right (or the OS's backend is not Vulkan through our loader).
 */
export function vulkanEnvForChild(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): NodeJS.ProcessEnv | null {
  if (!dawnBackend(platform, env).vulkanLoader) return null;
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

/** The limits a Node device is asked for: the caller's, else MARFT_GPU_LIMITS's, else the adapter's. */
export function nodeLimits(asked: LimitsMode | undefined, env: Env = process.env): LimitsMode {
  if (asked) return asked;
  const v = env.MARFT_GPU_LIMITS?.trim().toLowerCase();
  if (!v) return 'adapter';
  if (!LIMITS_MODES.includes(v as LimitsMode)) {
    throw new GpuError(
      'NO_DEVICE',
      `MARFT_GPU_LIMITS is "${env.MARFT_GPU_LIMITS}", not one of ${LIMITS_MODES.join(', ')}`,
      `set MARFT_GPU_LIMITS to ${LIMITS_MODES.join(' or ')}, or unset it for the adapter's limits`,
    );
  }
  return v as LimitsMode;
}

let shared: { limits: LimitsMode; gpu: Promise<Gpu> } | null = null;

/**
 * One device per process; the `GPU` object stays local to this module (a global one keeps Node alive). The
 * first call's limits are the device's: a later call that asks for other limits is refused.
 */
export function acquireNodeGpu(opts: AcquireOptions = {}): Promise<Gpu> {
  let limits: LimitsMode;
  try {
    limits = nodeLimits(opts.limits);
  } catch (e) {
    return Promise.reject(e instanceof Error ? e : new Error(String(e)));
  }
  if (shared && shared.limits !== limits) {
    return Promise.reject(
      new GpuError(
        'NO_DEVICE',
        `this process's GPU device was opened with ${shared.limits} limits, not ${limits}`,
        'ask for one kind of limits per process',
      ),
    );
  }
  if (!shared) {
    const s = { limits, gpu: createNodeGpu({ ...opts, limits }) };
    shared = s;
    s.gpu.catch(() => {
      if (shared === s) shared = null;
    });
  }
  return shared.gpu;
}

/**
 * A new, unshared device on a fresh Dawn instance: for a run that replaces a lost device, and for
 * fault-injection tests that destroy their own device without touching the process-wide one.
 */
export function createNodeGpu(opts: AcquireOptions = {}): Promise<Gpu> {
  return (async () => {
    const platform = process.platform;
    const { backend, api, vulkanLoader } = dawnBackend(platform, process.env);
    let driver = '';
    let late = '';
    let used = `Dawn backend: ${api}`;
    if (vulkanLoader) {
      process.env.XDG_RUNTIME_DIR ??= '/tmp';
      const preset = process.env.VK_ICD_FILENAMES || process.env.VK_DRIVER_FILES;
      const chosen = chooseVulkanDriver();
      driver = ` (driver ${chosen.driver}: ${chosen.reason})`;
      used = `Vulkan driver: ${chosen.driver} (${chosen.reason})`;
      late = preset
        ? ''
        : '; the driver variables were set after the process started: run through an entry point that calls vulkanEnvForChild';
    }
    let webgpu: typeof import('webgpu');
    try {
      webgpu = await import('webgpu');
    } catch (e) {
      throw new GpuError(
        'NO_WEBGPU',
        `cannot load Dawn (the 'webgpu' package) for ${platform}-${process.arch}: ${(e as Error).message.split('\n')[0]}`,
        'run `npm ci` in the project root; the package ships builds for macOS (universal), Windows and Linux (x64, arm64) only',
      );
    }
    Object.assign(globalThis, webgpu.globals);
    const gpu = webgpu.create([`backend=${backend}`]);
    let g: Gpu;
    try {
      g = await acquireFrom(gpu, { ...opts, limits: nodeLimits(opts.limits) });
    } catch (e) {
      // the browser's hint for a refused device speaks of tabs: here the driver is what to look at
      if (e instanceof GpuError && e.code === 'NO_DEVICE')
        throw new GpuError('NO_DEVICE', `${messageWithoutHint(e.message)} (${api})`, noGpuHint(platform, backend));
      if (e instanceof GpuError && e.code !== 'NO_ADAPTER') throw e;
      const why = e instanceof GpuError ? '' : `: ${(e as Error).message.split('\n')[0]}`;
      throw new GpuError('NO_ADAPTER', `no GPU: Dawn found no ${api} adapter${driver}${why}${late}`, noGpuHint(platform, backend));
    }
    g.instance = gpu;
    opts.log?.(used);
    return g;
  })();
}

/** Forgets the shared device (after destroy() in fault-injection tests). */
export function resetNodeGpu(): void {
  shared = null;
}
