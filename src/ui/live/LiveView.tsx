// The Train tab: progress, time left (the device probe's estimate until an iteration is measured, counting
// down every second), and the live charts (per-agent reward and accuracy, losses, entropy, KL, clip fraction,
// throughput; one smoothing control for all), and the opt-in Profile panel (per-kernel GPU time of one iteration).

import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { estimateIteration } from '../gpu-estimate.ts';
import { continueInterrupted, dismissInterrupted } from '../actions.ts';
import { selectInterrupted, selectLastMetrics, selectOverlays, selectRun, selectRunActive, useLab } from '../store.ts';
import { Chart, type Line } from './Chart.tsx';
import { ProfilePanel } from './ProfilePanel.tsx';
import { OpenDemo } from '../runs/OpenDemo.tsx';
import { agentKey, formatDuration, timeLeft } from './metric-keys.ts';

/** The team curve's band colour (light slate: the agents' lines stay readable on it). */
const TEAM_BAND = '#aab3c2';
const PALETTE = ['#d9534f', '#3b6ed6', '#2e9e62', '#b8860b', '#8e44ad', '#16a2b8'];
// the live run's agents, then those only an overlaid run has (its per-agent curves need a line too)
const selectRoles = (s: ReturnType<typeof useLab.getState>): string[] => {
  const roles = new Set(s.run.roles);
  for (const o of s.overlays) for (const m of o.history) for (const r of Object.keys(m.agents)) roles.add(r);
  return [...roles];
};
const selectEmpty = (s: ReturnType<typeof useLab.getState>) => s.history.length === 0 && s.run.runId === null;
/** The device probe's estimate of one iteration of the run's config (before one was measured), or null. */
const selectEstimate = (s: ReturnType<typeof useLab.getState>) =>
  s.gpu.status === 'ready' && s.model.info ? estimateIteration(s.draft, s.model.info, s.gpu.probe.speed).seconds : null;
const TICKING = ['running', 'pausing', 'stopping'];

/** Date.now(), once a second while `on` (the time-left countdown). */
function useNow(on: boolean): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    if (!on) return undefined;
    const id = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(id);
  }, [on]);
  return now;
}

function Progress() {
  const run = useLab(selectRun);
  const history = useLab((s) => s.history);
  const estimate = useLab(selectEstimate);
  const now = useNow(TICKING.includes(run.status));
  const elapsed = run.startedAt === null ? 0 : Math.max(0, (now - run.startedAt) / 1000);
  const eta = timeLeft(history, run.iteration, run.total, estimate, elapsed);
  const last = useLab(selectLastMetrics);
  const pct = run.total ? Math.min(100, (run.iteration / run.total) * 100) : 0;
  return (
    <section className="card progress-card" data-testid="progress">
      <div className="row spread">
        <strong data-testid="progress-text">
          Iteration {run.iteration} / {run.total || '–'}
        </strong>
        <span>
          time left:{' '}
          <span data-testid="eta" data-seconds={eta === null ? '' : Math.round(eta)}>
            {TICKING.includes(run.status) ? formatDuration(eta) : '–'}
          </span>
          {TICKING.includes(run.status) && !history.length && eta !== null && (
            <span className="hint" title="from a short probe of this device, until the first iteration is measured">
              {' '}
              (estimate)
            </span>
          )}
        </span>
      </div>
      <div className="bar">
        <div className="fill" style={{ width: `${pct}%` }} />
      </div>
      <p className="hint" data-testid="phase">
        {run.phase ? `${run.phase}: ${run.detail}` : run.message || run.status}
      </p>
      {last && (
        <p className="stats" data-testid="last-iteration" data-iteration={last.iteration} data-seconds={JSON.stringify(last.seconds)}>
          last iteration: team accuracy {(last.accuracy * 100).toFixed(0)}%, reward {last.teamReward.toFixed(2)},{' '}
          {last.tokensPerSecond.toFixed(1)} tokens/s, {last.seconds.total.toFixed(1)} s (rollout {last.seconds.rollout.toFixed(1)}, update{' '}
          {last.seconds.update.toFixed(1)}){last.trained.length ? `; trained ${last.trained.join(', ')}` : '; critic warm-up'}
          {last.skipped.length ? `; skipped: ${last.skipped.join('; ')}` : ''}
        </p>
      )}
    </section>
  );
}

/** After a reload (or a closed tab) mid-training: the run that was training, offered to continue from its last checkpoint. */
function Interrupted() {
  const i = useLab(selectInterrupted);
  const active = useLab(selectRunActive);
  const gpuReady = useLab((s) => s.gpu.status === 'ready');
  if (!i) return null;
  return (
    <section className="card interrupted" data-testid="train-interrupted" role="region" aria-label="interrupted run">
      <p>
        <b>Run {i.runId} was training when the page was closed or reloaded.</b> Its last checkpoint
        {i.iteration !== null ? ` (iteration ${i.iteration})` : ''} is kept in this browser: continue training from there, or open it
        paused.
      </p>
      <div className="row">
        <button
          type="button"
          className="primary"
          data-testid="continue-interrupted"
          disabled={active || !gpuReady}
          onClick={() => void continueInterrupted(true)}
        >
          Continue training ▶
        </button>
        <button type="button" data-testid="open-interrupted" disabled={active || !gpuReady} onClick={() => void continueInterrupted(false)}>
          Open it paused
        </button>
        <button type="button" className="link" data-testid="dismiss-interrupted" onClick={dismissInterrupted}>
          Dismiss
        </button>
      </div>
    </section>
  );
}

function ChartControls({ smoothing, setSmoothing }: { smoothing: number; setSmoothing: (v: number) => void }) {
  const overlays = useLab(useShallow(selectOverlays));
  return (
    <div className="row chart-controls">
      <label>
        smoothing (EMA){' '}
        <input
          type="range"
          min={0}
          max={0.99}
          step={0.01}
          value={smoothing}
          data-testid="chart-smoothing"
          onChange={(e) => setSmoothing(Number(e.target.value))}
        />{' '}
        <output>{smoothing.toFixed(2)}</output>
      </label>
      <span className="hint">
        {overlays.length ? `dashed: ${overlays.map((o) => o.runId).join(', ')}` : 'overlay saved runs from Runs (“overlay on charts”)'} ·
        drag to zoom, double-click to reset
      </span>
    </div>
  );
}

export function LiveView() {
  const roles = useLab(useShallow(selectRoles));
  const interrupted = useLab(selectInterrupted);
  const empty = useLab(selectEmpty) && !interrupted;
  const [smoothing, setSmoothing] = useState(0);
  const perAgent = (what: 'reward' | 'accuracy'): Line[] => [
    // the team as a wide band under the agents' lines: where an agent's curve equals it, both stay visible
    { key: `team.${what}`, label: 'team', color: TEAM_BAND, width: 7 },
    ...roles.map((r, i) => ({ key: agentKey(r, what), label: r, color: PALETTE[i % PALETTE.length] })),
  ];
  return (
    <div className="live">
      <Progress />
      <Interrupted />
      {empty && (
        <p className="hint card" data-testid="train-empty">
          Nothing trained yet: press Train, or <OpenDemo where="train" /> to explore a short recorded run.
        </p>
      )}
      <ChartControls smoothing={smoothing} setSmoothing={setSmoothing} />
      <div className="charts">
        <Chart
          smoothing={smoothing}
          title="Reward"
          testid="reward-chart"
          lines={perAgent('reward')}
          note="team (grey band): reward per episode; per agent: mean credited reward of its actions. An agent's line inside the band equals the team's"
        />
        <Chart
          smoothing={smoothing}
          title="Accuracy"
          testid="accuracy-chart"
          lines={perAgent('accuracy')}
          note="team (grey band): fraction of episodes solved; per answering agent: its own answers"
        />
        <Chart
          smoothing={smoothing}
          title="Losses"
          testid="loss-chart"
          lines={[
            { key: 'loss.policy', label: 'policy', color: '#3b6ed6' },
            { key: 'loss.value', label: 'value', color: '#d9534f' },
          ]}
        />
        <Chart
          smoothing={smoothing}
          title="Entropy"
          testid="entropy-chart"
          lines={[{ key: 'entropy', label: 'entropy', color: '#2e9e62' }]}
        />
        <Chart
          smoothing={smoothing}
          title="KL"
          testid="kl-chart"
          lines={[
            { key: 'kl.approx', label: 'approx KL (old→new)', color: '#8e44ad' },
            { key: 'kl.ref', label: 'KL to reference', color: '#b8860b' },
          ]}
        />
        <Chart
          smoothing={smoothing}
          title="Clip fraction"
          testid="clip-chart"
          lines={[{ key: 'clip', label: 'clipped ratios', color: '#16a2b8' }]}
        />
        <Chart
          smoothing={smoothing}
          title="Throughput"
          testid="tps-chart"
          lines={[{ key: 'tps', label: 'generated tokens/s', color: '#1d2330' }]}
        />
      </div>
      <ProfilePanel />
    </div>
  );
}
