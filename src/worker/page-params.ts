// The lab's address switches, read by the page (a worker's own location is its script's) and passed to the
// engine worker:
// - ?limits=default: a device with WebGPU's default limits (what every device has, a laptop's included)
//   instead of the adapter's maximum, to check that a run fits them; told before anything opens a device
//   (EngineApi.setDeviceLimits).
// - ?warmup=on|off: the kernel warm-up after a model loads (EngineApi.prepareKernels). By default ('auto')
//   it runs on a hardware adapter only: on a CPU adapter an iteration costs far more than its compiles.

import type { LimitsMode } from '../gpu/device.ts';

/** The limits a page address asks for: 'default' for ?limits=default, else the adapter's. */
export function limitsParam(search: string): LimitsMode {
  return new URLSearchParams(search).get('limits') === 'default' ? 'default' : 'adapter';
}

export type WarmUpMode = 'auto' | 'on' | 'off';

/** The kernel warm-up a page address asks for: ?warmup=on or ?warmup=off, else 'auto'. */
export function warmUpParam(search: string): WarmUpMode {
  const v = new URLSearchParams(search).get('warmup');
  return v === 'on' || v === 'off' ? v : 'auto';
}
