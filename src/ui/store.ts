// The UI store (zustand): one store of slices; worker results land here through module-level actions.

import { create } from 'zustand';
import type { ProbeResult, WorkerError } from '../worker/api.ts';

export type GpuState =
  | { status: 'probing' }
  | { status: 'ready'; probe: ProbeResult }
  | { status: 'error'; error: WorkerError };

interface LabState {
  gpu: GpuState;
}

export const useLab = create<LabState>(() => ({ gpu: { status: 'probing' } }));

export const setGpuState = (gpu: GpuState): void => useLab.setState({ gpu });
export const selectGpu = (s: LabState): GpuState => s.gpu;
