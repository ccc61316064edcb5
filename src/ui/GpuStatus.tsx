// Shows which WebGPU adapter the engine found, or a clear, actionable error when there is none.

import { selectGpu, useLab } from './store.ts';

export function GpuStatus() {
  const gpu = useLab(selectGpu);
  if (gpu.status === 'probing') {
    return <section className="card" data-testid="gpu-status" data-state="probing">Looking for a WebGPU adapter…</section>;
  }
  if (gpu.status === 'error') {
    return (
      <section className="card error" data-testid="gpu-status" data-state="error" role="alert">
        <h2>WebGPU is not available ({gpu.error.code})</h2>
        <p>{gpu.error.message}</p>
        {gpu.error.hint && <p className="hint">{gpu.error.hint}</p>}
      </section>
    );
  }
  const { adapter, limits, kernelCheck } = gpu.probe;
  const name = [adapter.vendor, adapter.architecture, adapter.description].filter(Boolean).join(' · ') || 'unnamed adapter';
  return (
    <section className="card" data-testid="gpu-status" data-state="ready">
      <h2>GPU ready</h2>
      <p data-testid="adapter-name">adapter: {name}{adapter.isFallback ? ' (software fallback)' : ''}</p>
      <details>
        <summary className="hint">features and limits</summary>
        <p>features: {adapter.features.join(', ') || 'none'}</p>
        <p>largest buffer binding: {(limits.maxStorageBufferBindingSize / 2 ** 20).toFixed(0)} MiB</p>
      </details>
      <p data-testid="kernel-check" data-ok={String(kernelCheck.ok)}>kernel check: {kernelCheck.ok ? 'ok' : 'FAILED'} ({kernelCheck.detail})</p>
    </section>
  );
}
