// Device acquisition from a `GPU` object (navigator.gpu in the browser, Dawn's in Node): picks the
// adapter, asks for the features the kernels can use and the adapter's full limits (or, with limits
// 'default', WebGPU's default limits: what every WebGPU device has, a laptop's included, so a run that
// works there works anywhere), and wraps it in a Gpu.

import { Gpu, type LimitCaps } from './gpu.ts';
import { GpuError } from './errors.ts';

/** 'adapter': the adapter's maximum limits (the default); 'default': WebGPU's default limits. */
export type LimitsMode = 'adapter' | 'default';
export const LIMITS_MODES: readonly LimitsMode[] = ['adapter', 'default'];

export interface AcquireOptions {
  powerPreference?: GPUPowerPreference;
  /** Which limits the device is asked for (default 'adapter'). */
  limits?: LimitsMode;
  /** Lower caps on the device's limits that the Gpu honours as if they were the device's (GpuOptions.caps). */
  caps?: LimitCaps;
  /** Called with one line naming the chosen adapter. */
  log?: (line: string) => void;
}

const WANTED_FEATURES: GPUFeatureName[] = ['subgroups', 'timestamp-query'];
const WANTED_LIMITS = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxStorageBuffersPerShaderStage',
] as const;

export async function acquireFrom(gpu: GPU, opts: AcquireOptions = {}): Promise<Gpu> {
  const adapter = await gpu.requestAdapter({ powerPreference: opts.powerPreference ?? 'high-performance' });
  if (!adapter) throw new GpuError('NO_ADAPTER', 'WebGPU is available but requestAdapter() returned no adapter');
  const requiredFeatures = WANTED_FEATURES.filter((f) => adapter.features.has(f));
  // with no required limits a device gets WebGPU's defaults
  const requiredLimits: Record<string, number> = {};
  if ((opts.limits ?? 'adapter') === 'adapter') for (const k of WANTED_LIMITS) requiredLimits[k] = adapter.limits[k];
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredFeatures, requiredLimits, label: 'marft-lab' });
  } catch (e) {
    throw new GpuError('NO_DEVICE', `requestDevice failed: ${(e as Error).message}`);
  }
  const g = new Gpu(device, adapter, { caps: opts.caps });
  const a = g.adapter;
  opts.log?.(
    `WebGPU adapter: ${[a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' / ') || 'unknown'}` +
      `${a.isFallback ? ' (fallback)' : ''}; features: ${requiredFeatures.join(', ') || 'none'}` +
      `${opts.limits === 'default' ? '; WebGPU default limits' : ''}`,
  );
  return g;
}
