// Shows which WebGPU adapter the engine found, or a clear, actionable error when there is none (with what
// a browser needs for WebGPU). A software adapter (SwiftShader: the CPU) is named as such, with a rough
// time per iteration of the builder's config from the probe's speed measurement, and beside it the config's
// memory plan on the loaded model (the engine's, src/marft/plan.ts, as `marft train --plan` prints it).

import { useEffect, useState } from 'react';
import type { RunPlan } from '../worker/api.ts';
import { planConfig } from './actions.ts';
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
      Estimated time per iteration of the builder's config: <strong>about {formatDuration(e.seconds)}</strong> (rollout{' '}
      {formatDuration(e.rolloutSeconds)}, scoring and update {formatDuration(e.updateSeconds)}; a rough scale from a probe of this device:{' '}
      {speed.dispatchMs.toFixed(2)} ms per dispatch, {speed.gflops.toFixed(2)} GFLOP/s).
    </p>
  );
}

const mib = (n: number): string => (n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(1)} MiB`);

/** The builder config's expected peak GPU memory, what holds it, and what to change when it does not fit. */
function MemoryPlan() {
  const gpu = useLab(selectGpu);
  const draft = useLab(selectDraft);
  const model = useLab(selectModel);
  const [plan, setPlan] = useState<RunPlan | null>(null);
  const ready = gpu.status === 'ready' && model.info !== null;
  useEffect(() => {
    if (!ready) return undefined;
    let live = true;
    // edits come in bursts (typing a number): plan once they settle
    const t = setTimeout(() => {
      void planConfig(draft).then((p) => {
        if (live) setPlan(p);
      });
    }, 400);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [ready, draft, model.info]);
  if (!ready || !plan) return null;
  const fits = plan.problems.length === 0;
  const peak = plan.phases[plan.peakPhase];
  return (
    <div data-testid="memory-plan" data-peak-bytes={plan.peakBytes} data-fits={String(fits)}>
      <p className={fits ? 'hint' : ''}>
        Expected peak GPU memory of the builder's config: <strong>about {mib(plan.peakBytes)}</strong> in{' '}
        {plan.peakPhase === 'score' ? 'scoring' : plan.peakPhase} (model and training state {mib(plan.residentBytes)}, {plan.peakPhase}{' '}
        {mib(peak.bytes)}, free buffers kept for reuse {mib(plan.poolCacheBytes)}; every generation at its maxNewTokens)
        {fits ? '.' : ': it does not fit.'}
      </p>
      {!fits && (
        <div role="alert">
          <ul>
            {plan.problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
          {plan.advice.length > 0 && (
            <p>Change one of: {plan.advice.map((a) => `${a.change} (peak ${mib(a.peakBytes)}${a.fits ? ', fits' : ''})`).join('; ')}.</p>
          )}
        </div>
      )}
      <details>
        <summary className="hint">what holds it</summary>
        <ul data-testid="memory-plan-items">
          {[...plan.resident, ...peak.items].map((x) => (
            <li key={x.name}>
              {x.name}: {mib(x.bytes)} ({x.detail})
            </li>
          ))}
        </ul>
      </details>
    </div>
  );
}

export function GpuStatus() {
  const gpu = useLab(selectGpu);
  if (gpu.status === 'probing') {
    return (
      <section className="card" data-testid="gpu-status" data-state="probing">
        Looking for a WebGPU adapter…
      </section>
    );
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
            <ul>
              {WEBGPU_BROWSERS.map((b) => (
                <li key={b}>{b}</li>
              ))}
            </ul>
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
    <section
      className={`card${software ? ' gpu-software' : ''}`}
      data-testid="gpu-status"
      data-state="ready"
      data-software={String(software)}
      data-adapter={JSON.stringify(adapter)}
    >
      <h2>{software ? 'Software adapter: WebGPU runs on the CPU' : 'GPU ready'}</h2>
      <p data-testid="adapter-name">
        adapter: {name}
        {adapter.isFallback ? ' (software fallback)' : ''}
      </p>
      {software && (
        <p data-testid="software-note">
          This browser found no usable GPU and emulates one on the CPU ({adapter.architecture || adapter.description || 'software'}):
          everything works, but training is hundreds of times slower than on a GPU. Keep runs tiny (1–2 episodes, a few tokens), or open the
          lab in a browser with GPU access (chrome://gpu says why the GPU is not used).
        </p>
      )}
      <IterationEstimate software={software} />
      <MemoryPlan />
      <details>
        <summary className="hint">features and limits</summary>
        <p>features: {adapter.features.join(', ') || 'none'}</p>
        <p>largest buffer binding: {(limits.maxStorageBufferBindingSize / 2 ** 20).toFixed(0)} MiB</p>
      </details>
      <p data-testid="kernel-check" data-ok={String(kernelCheck.ok)}>
        kernel check: {kernelCheck.ok ? 'ok' : 'FAILED'} ({kernelCheck.detail})
      </p>
    </section>
  );
}
