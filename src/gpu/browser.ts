// Device acquisition in the browser (window or worker): a clear error when WebGPU is missing.

import type { Gpu } from './gpu.ts';
import { type AcquireOptions, acquireFrom } from './device.ts';
import { GpuError } from './errors.ts';

export async function acquireBrowserGpu(opts: AcquireOptions = {}): Promise<Gpu> {
  const nav = (globalThis as { navigator?: Navigator }).navigator;
  if (!nav?.gpu) {
    const insecure = typeof isSecureContext !== 'undefined' && !isSecureContext;
    throw new GpuError(
      'NO_WEBGPU',
      insecure
        ? 'WebGPU is unavailable because this page is not a secure context (open it via http://localhost or https://)'
        : 'This browser does not expose WebGPU (navigator.gpu is undefined)',
    );
  }
  return acquireFrom(nav.gpu, opts);
}
