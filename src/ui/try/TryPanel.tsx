// The Try tab: type a problem (with the answer the judge checks) or pick a held-out task, and watch the
// team answer it agent by agent along the graph, each agent's text streaming in as it is generated, then
// the team's answer and the environment's reward for each turn. Greedy or sampled; Stop ends it within a
// decode step. The team is the loaded run's (its adapters as they stand) or, with no run loaded, the base
// model under the builder's settings. A try is refused while a run trains (it does not queue).

import { useEffect, useState } from 'react';
import type { WorkerError } from '../../worker/api.ts';
import { ErrorBox } from '../Notices.tsx';
import { type LabState, selectRunActive, selectTry, useLab } from '../store.ts';
import { heldOutPreview, startTry, stopTry } from './try-actions.ts';
import { type TryView, currentTurn, waitingRoles } from './transcript.ts';

const selectGpuReady = (s: LabState): boolean => s.gpu.status === 'ready';
/** Who would answer, before a try says it exactly. */
const selectTeam = (s: LabState): string =>
  s.run.runId
    ? `run ${s.run.runId} (its adapters as they stand)`
    : 'the base model, untrained (no run loaded: open one in Runs, or train one)';
/** Changes when the environment a held-out task comes from may change. */
const selectEnvKey = (s: LabState): string => `${s.run.runId ?? ''}|${JSON.stringify(s.draft.env)}`;

export function TryPanel() {
  const view = useLab(selectTry);
  const active = useLab(selectRunActive);
  const ready = useLab(selectGpuReady);
  const team = useLab(selectTeam);
  const [source, setSource] = useState<'typed' | 'held-out'>('typed');
  const [text, setText] = useState('Compute 12 + 7.');
  const [answer, setAnswer] = useState('19');
  const [seed, setSeed] = useState(0);
  const [sampled, setSampled] = useState(false);
  const [temperature, setTemperature] = useState(0.7);
  const running = view.status === 'running' || view.status === 'stopping';
  const problem = source === 'typed' ? { text, answer } : { heldOut: seed };
  const canStart = ready && !active && !running && (source === 'held-out' || (text.trim() !== '' && answer.trim() !== ''));
  return (
    <section className="card try-panel" data-testid="try-panel" aria-labelledby="try-title">
      <h2 id="try-title">Try the team</h2>
      <p className="hint">Team: {team}. Each agent acts in the graph's order and sees what its inputs answered, as in training.</p>
      <fieldset className="try-source">
        <legend>Problem</legend>
        <label className="check">
          <input
            type="radio"
            name="try-source"
            checked={source === 'typed'}
            onChange={() => setSource('typed')}
            data-testid="try-source-typed"
          />{' '}
          Type a problem
        </label>
        <label className="check">
          <input
            type="radio"
            name="try-source"
            checked={source === 'held-out'}
            onChange={() => setSource('held-out')}
            data-testid="try-source-held-out"
          />{' '}
          A held-out task of the environment
        </label>
        {source === 'typed' ? (
          <div className="grid-try">
            <label className="field">
              <span>Problem</span>
              <textarea rows={2} value={text} onChange={(e) => setText(e.target.value)} data-testid="try-problem" />
            </label>
            <label className="field">
              <span>Expected answer (the judge compares the team's \boxed{'{}'} answer with it)</span>
              <input type="text" value={answer} onChange={(e) => setAnswer(e.target.value)} data-testid="try-answer" />
            </label>
          </div>
        ) : (
          <HeldOut seed={seed} setSeed={setSeed} />
        )}
      </fieldset>
      <div className="row">
        <label className="field inline">
          <span>Decoding</span>
          <select
            value={sampled ? 'sampled' : 'greedy'}
            onChange={(e) => setSampled(e.target.value === 'sampled')}
            data-testid="try-decoding"
          >
            <option value="greedy">greedy</option>
            <option value="sampled">sampled</option>
          </select>
        </label>
        {sampled && (
          <label className="field inline">
            <span>Temperature</span>
            <input
              type="number"
              min={0.05}
              max={10}
              step={0.05}
              value={temperature}
              onChange={(e) => setTemperature(Number(e.target.value))}
              data-testid="try-temperature"
              style={{ width: 90 }}
            />
          </label>
        )}
        <button
          type="button"
          className="primary"
          disabled={!canStart}
          onClick={() => void startTry(problem, sampled ? temperature : 0)}
          data-testid="try-start"
        >
          Ask the team
        </button>
        <button type="button" disabled={view.status !== 'running'} onClick={stopTry} data-testid="try-stop">
          Stop
        </button>
      </div>
      {active && (
        <p className="hint" data-testid="try-refused">
          A run is training: pause or stop it to try the team (a try does not queue behind training).
        </p>
      )}
      {!ready && <p className="hint">The GPU is not ready yet.</p>}
      <Transcript view={view} />
    </section>
  );
}

function HeldOut({ seed, setSeed }: { seed: number; setSeed: (n: number) => void }) {
  const envKey = useLab(selectEnvKey);
  const [preview, setPreview] = useState<{ task: string; gold: string | null } | { error: WorkerError } | null>(null);
  useEffect(() => {
    let live = true;
    void heldOutPreview(seed).then((p) => {
      if (live) setPreview(p);
    });
    return () => {
      live = false;
    };
  }, [seed, envKey]);
  return (
    <div>
      <div className="row">
        <label className="field inline">
          <span>Task number</span>
          <input
            type="number"
            min={0}
            step={1}
            value={seed}
            onChange={(e) => setSeed(Math.max(0, Math.floor(Number(e.target.value) || 0)))}
            data-testid="try-seed"
            style={{ width: 100 }}
          />
        </label>
        <button type="button" onClick={() => setSeed(Math.floor(Math.random() * 100000))} data-testid="try-another">
          Another task
        </button>
      </div>
      {preview &&
        ('error' in preview ? (
          <ErrorBox error={preview.error} testid="try-task-error" />
        ) : (
          <p data-testid="try-task-preview">
            <span className="hint">Task:</span> {preview.task}
            {preview.gold !== null && <span className="hint"> (expected answer: {preview.gold})</span>}
          </p>
        ))}
    </div>
  );
}

function Transcript({ view }: { view: TryView }) {
  const turnCount = Math.max(view.turns.length, (currentTurn(view) ?? -1) + 1, ...view.actions.map((a) => a.turn + 1));
  const waiting = waitingRoles(view);
  const result = view.result;
  const status =
    view.status === 'running'
      ? 'The team is answering…'
      : view.status === 'stopping'
        ? 'Stopping…'
        : view.status === 'stopped'
          ? 'Stopped.'
          : view.status === 'done' && result
            ? `Done: ${result.correct ? 'correct' : 'not correct'}, reward ${result.teamReward}.`
            : '';
  return (
    <div className="try-transcript" data-testid="try-transcript" data-state={view.status}>
      <p role="status" aria-live="polite" className="hint" data-testid="try-status">
        {status}
      </p>
      {view.error && <ErrorBox error={view.error} testid="try-error" />}
      {view.task !== null && (
        <p data-testid="try-task">
          <strong>Task:</strong> {view.task} <span className="hint">— answered by {view.team}</span>
          {view.gold !== null && <span className="hint"> — expected answer {view.gold}</span>}
        </p>
      )}
      {Array.from({ length: turnCount }, (_, t) => {
        const judged = view.turns[t];
        return (
          <section key={t} className="try-turn" aria-label={`turn ${t + 1}`} data-testid={`try-turn-${t}`}>
            {view.horizon > 1 && (
              <h3>
                Turn {t + 1} of {view.horizon}
              </h3>
            )}
            <ol className="try-agents">
              {view.actions
                .filter((a) => a.turn === t)
                .map((a) => {
                  const streaming = !judged && (view.status === 'running' || view.status === 'stopping');
                  return (
                    <li key={a.id} className="try-agent" data-testid={`try-agent-${a.role}`} aria-busy={streaming}>
                      <strong>{a.role}</strong>{' '}
                      <span className="hint small">
                        {a.tokens} tokens{streaming ? ', generating…' : ''}
                      </span>
                      <pre className="try-text" data-testid={`try-text-${a.role}`}>
                        {a.text}
                      </pre>
                    </li>
                  );
                })}
              {!judged &&
                currentTurn(view) === t &&
                waiting.map((r) => (
                  <li key={`wait-${r}`} className="try-agent waiting" data-testid={`try-waiting-${r}`}>
                    <strong>{r}</strong> <span className="hint small">waiting for its turn</span>
                  </li>
                ))}
            </ol>
            {judged && (
              <p className={`try-judgement ${judged.correct ? 'good' : 'bad'}`} data-testid={`try-judgement-${t}`}>
                <strong>{judged.feedback}</strong>. Team answer {judged.answer ?? 'none given'}; reward{' '}
                <span data-testid={`try-reward-${t}`}>{judged.teamReward}</span>
              </p>
            )}
          </section>
        );
      })}
      {result && (
        <p className="try-result" data-testid="try-result" data-correct={String(result.correct)}>
          <strong>Final answer:</strong> {result.answer ?? 'none given'} · <strong>reward</strong>{' '}
          <span data-testid="try-reward">{result.teamReward}</span>
          {result.stopped ? ' (stopped before the episode ended)' : ` after ${result.turns} turn${result.turns === 1 ? '' : 's'}`}
        </p>
      )}
    </div>
  );
}
