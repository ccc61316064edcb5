// The catalogue of GPU-layer errors: each has a code, a message naming the problem, and a hint.

import { CodedError } from '../common/errors.ts';

export type GpuErrorCode = 'NO_WEBGPU' | 'NO_ADAPTER' | 'NO_DEVICE' | 'DEVICE_LOST' | 'VALIDATION' | 'SHAPE' | 'LIMIT' | 'RECORDING';

const HINTS: Record<GpuErrorCode, string> = {
  NO_WEBGPU:
    'Open the lab in Chrome or Edge 113+ (on Linux start Chrome with --enable-unsafe-webgpu, or enable chrome://flags/#enable-unsafe-webgpu), and serve it from https:// or http://localhost.',
  NO_ADAPTER:
    "The browser exposes WebGPU but found no usable GPU. Update the GPU driver, check chrome://gpu, or in Node install a Vulkan driver or Debian's `chromium` package (for the SwiftShader CPU adapter).",
  NO_DEVICE: 'The adapter refused to create a device with the requested limits; close other GPU-heavy tabs and retry.',
  DEVICE_LOST: 'The GPU device was lost (driver reset, sleep, or out of memory). Reload or resume from the last checkpoint.',
  VALIDATION: 'A WebGPU validation error: this is a bug in the lab; please report it with the label shown.',
  SHAPE: 'The op was called with tensors of the wrong shape or dtype; check the caller.',
  LIMIT: 'The work exceeds a limit of this device; use a smaller model, batch or sequence length.',
  RECORDING:
    'A recording of dispatches was misused (a copy, write or read inside it, or a replay after its disposal): this is a bug in the lab; please report it.',
};

export class GpuError extends CodedError<GpuErrorCode> {
  constructor(code: GpuErrorCode, message: string, hint = HINTS[code]) {
    super('GpuError', code, message, hint);
  }
}

/** Throws a SHAPE error naming the op, before anything is dispatched. */
export function shapeError(op: string, message: string): never {
  throw new GpuError('SHAPE', `${op}: ${message}`);
}
