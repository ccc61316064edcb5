// The typed API between the UI thread and the training worker (comlink). Errors cross the boundary as
// plain data (code, message, hint) so the UI can show the catalogue's hint.

import type { AdapterSummary } from '../gpu/context.ts';

export interface WorkerError {
  code: string;
  message: string;
  hint?: string;
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: WorkerError };

export interface ProbeResult {
  adapter: AdapterSummary;
  limits: { maxStorageBufferBindingSize: number; maxBufferSize: number; maxComputeWorkgroupStorageSize: number };
  /** A tiny kernel run on the device and compared with the CPU: proves compute works end to end. */
  kernelCheck: { ok: boolean; detail: string };
}

export interface EngineApi {
  probe(): Promise<Result<ProbeResult>>;
}

export function toWorkerError(e: unknown): WorkerError {
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) {
    const g = e as { code: string; message: string; hint?: string };
    return { code: String(g.code), message: g.message.split('\n  hint:')[0], hint: g.hint };
  }
  return { code: 'INTERNAL', message: e instanceof Error ? e.message : String(e) };
}
