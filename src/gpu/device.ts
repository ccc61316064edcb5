// Device acquisition from a `GPU` object (navigator.gpu in the browser, Dawn's in Node): picks the
// adapter, asks for the features the kernels can use and the adapter's full limits, and wraps it in a Gpu.

import { Gpu } from './gpu.ts';
import { GpuError } from './errors.ts';

export interface AcquireOptions {
  powerPreference?: GPUPowerPreference;
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
  const requiredLimits: Record<string, number> = {};
  for (const k of WANTED_LIMITS) requiredLimits[k] = adapter.limits[k];
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredFeatures, requiredLimits, label: 'marft-lab' });
  } catch (e) {
    throw new GpuError('NO_DEVICE', `requestDevice failed: ${(e as Error).message}`);
  }
  const g = new Gpu(device, adapter);
  const a = g.adapter;
  opts.log?.(
    `WebGPU adapter: ${[a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' / ') || 'unknown'}` +
      `${a.isFallback ? ' (fallback)' : ''}; features: ${requiredFeatures.join(', ') || 'none'}`,
  );
  return g;
}
