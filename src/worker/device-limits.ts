// The lab's ?limits=default switch: the page's address asks the engine worker for a device with WebGPU's
// default limits (what every device has, a laptop's included) instead of the adapter's maximum, to check
// that a run fits them. The page reads it (a worker's own location is its script's) and tells the worker
// before anything opens a device (EngineApi.setDeviceLimits).

import type { LimitsMode } from '../gpu/device.ts';

/** The limits a page address asks for: 'default' for ?limits=default, else the adapter's. */
export function limitsParam(search: string): LimitsMode {
  return new URLSearchParams(search).get('limits') === 'default' ? 'default' : 'adapter';
}
