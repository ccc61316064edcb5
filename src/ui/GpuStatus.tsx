// Shows which WebGPU adapter the engine found, or a clear, actionable error when there is none (with what
// a browser needs for WebGPU). A software adapter (SwiftShader: the CPU) is named as such, with a rough
// time per iteration of the builder's config from the probe's speed measurement.

import { formatDuration } from './live/metric-keys.ts';
import { WEBGPU_BROWSERS, estimateIteration, isSoftwareAdapter } from './gpu-estimate.ts';
import { selectDraft, selectGpu, selectModel, useLab } from './store.ts';

function IterationEstimate({ software }: { software: boolean }) {
  const gpu = useLab(selectGpu);
  const draft = useLab(selectDraft);
  const model = useLab(selectModel);
  if (gpu.status !== 'ready' || !model.info) return null;
  const { speed } = gpu.probe;
  const e = estimateIteration(draft, model.info, speed);
  return (
    <p data-testid="iteration-estimate" data-seconds={e.seconds.toFixed(1)} className={software ? '' : 'hint'}>
      Estimated time per iteration of the builder's config: <strong>about {formatDuration(e.seconds)}</strong>
      {' '}(rollout {formatDuration(e.rolloutSeconds)}, scoring and update {formatDuration(e.updateSeconds)}; a rough scale from a
      probe of this device: {speed.dispatchMs.toFixed(2)} ms per dispatch, {speed.gflops.toFixed(2)} GFLOP/s).
    </p>
  );
}

export function GpuStatus() {
  const gpu = useLab(selectGpu);
  if (gpu.status === 'probing') {
    return <section className="card" data-testid="gpu-status" data-state="probing">Looking for a WebGPU adapter…</section>;
  }
  if (gpu.status === 'error') {
    const browser = gpu.error.code === 'NO_WEBGPU' || gpu.error.code === 'NO_ADAPTER';
    return (
      <section className="card error" data-testid="gpu-status" data-state="error" role="alert">
        <h2>WebGPU is not available ({gpu.error.code})</h2>
        <p>{gpu.error.message}</p>
        {gpu.error.hint && <p className="hint">{gpu.error.hint}</p>}
        {browser && (
          <details open data-testid="webgpu-browsers">
            <summary>What the lab needs: a browser with WebGPU</summary>
            <ul>{WEBGPU_BROWSERS.map((b) => <li key={b}>{b}</li>)}</ul>
            <p className="hint">The Build tab works without it (configs can be edited, exported and shared); training needs WebGPU.</p>
          </details>
        )}
      </section>
    );
  }
  const { adapter, limits, kernelCheck } = gpu.probe;
  const software = isSoftwareAdapter(adapter);
  const name = [adapter.vendor, adapter.architecture, adapter.description].filter(Boolean).join(' · ') || 'unnamed adapter';
  return (
    <section className={`card${software ? ' gpu-software' : ''}`} data-testid="gpu-status" data-state="ready" data-software={String(software)}
      data-adapter={JSON.stringify(adapter)}>
      <h2>{software ? 'Software adapter: WebGPU runs on the CPU' : 'GPU ready'}</h2>
      <p data-testid="adapter-name">adapter: {name}{adapter.isFallback ? ' (software fallback)' : ''}</p>
      {software && (
        <p data-testid="software-note">
          This browser found no usable GPU and emulates one on the CPU ({adapter.architecture || adapter.description || 'software'}): everything works,
          but training is hundreds of times slower than on a GPU. Keep runs tiny (1–2 episodes, a few tokens), or open the lab in a
          browser with GPU access (chrome://gpu says why the GPU is not used).
        </p>
      )}
      <IterationEstimate software={software} />
      <details>
        <summary className="hint">features and limits</summary>
        <p>features: {adapter.features.join(', ') || 'none'}</p>
        <p>largest buffer binding: {(limits.maxStorageBufferBindingSize / 2 ** 20).toFixed(0)} MiB</p>
      </details>
      <p data-testid="kernel-check" data-ok={String(kernelCheck.ok)}>kernel check: {kernelCheck.ok ? 'ok' : 'FAILED'} ({kernelCheck.detail})</p>
    </section>
  );
}
