// The credit-assignment sandbox (Inspect tab), in the spirit of TensorFlow Playground: a hand-made or a
// recorded episode and every credit setting as direct controls; each change recomputes at once in the
// worker through `marft inspect`'s code (the trainer's computeTargets), so it needs no GPU, model or run.
// One colour scale for every agent, a paragraph on where each agent's advantage comes from, and a
// classroom mode that steps the GAE chain back along the agents (space / arrows, or Play).

import { useEffect, useMemo, useState } from 'react';
import { SCORE_STEP_REWARDS, STEP_REWARD_NAMES, type StepRewardName } from '../../config/run-config-schema.ts';
import type { CreditMethod, InspectedLine, WorkerError } from '../../worker/api.ts';
import { creditSandbox, recordedEpisodeLines } from '../actions.ts';
import { patchInspector, selectInspector, useLab } from '../store.ts';
import { chipStyle, legendStops, sharedScale } from './colors.ts';
import {
  type Sandbox,
  type SandboxAction,
  defaultSandbox,
  explainCredit,
  gaeChain,
  newAction,
  resizeAction,
  sandboxConfig,
  sandboxFromRecorded,
  sandboxJsonl,
  setTurnCount,
} from './sandbox.ts';

const METHODS: CreditMethod[] = ['equal', 'step_discount', 'per_step'];
const fmt = (v: number | null | undefined) => (v === null || v === undefined ? '—' : v.toFixed(3));
const num = (s: string, fallback: number) => (Number.isFinite(Number(s)) && s.trim() !== '' ? Number(s) : fallback);

function Num({
  label,
  value,
  onChange,
  testId,
  step = 0.05,
  min,
  max,
}: {
  label: string;
  value: number;
  onChange: (v: number) => void;
  testId: string;
  step?: number;
  min?: number;
  max?: number;
}) {
  return (
    <label className="field inline">
      <span>{label}</span>
      <input
        type="number"
        value={value}
        step={step}
        min={min}
        max={max}
        data-testid={testId}
        aria-label={label}
        onChange={(e) => onChange(num(e.target.value, value))}
      />
    </label>
  );
}

function ActionEditor({
  a,
  roles,
  level,
  scored,
  onChange,
  onRemove,
  id,
}: {
  a: SandboxAction;
  roles: string[];
  level: Sandbox['level'];
  /** The role's per_step helper when it pays the environment's score (then the score is a control), else null. */
  scored: StepRewardName | null;
  onChange: (a: SandboxAction) => void;
  onRemove: (() => void) | null;
  id: string;
}) {
  return (
    <div className="sb-action row" data-testid={`sb-action-${id}`}>
      <label className="field inline">
        <span>agent</span>
        <select value={a.role} data-testid={`sb-role-${id}`} onChange={(e) => onChange({ ...a, role: e.target.value })}>
          {roles.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </label>
      <Num label="tokens" value={a.tokens} step={1} min={1} testId={`sb-tokens-${id}`} onChange={(n) => onChange(resizeAction(a, n))} />
      {level === 'action' ? (
        <Num
          label="V (critic)"
          value={a.values[0]}
          testId={`sb-value-${id}`}
          onChange={(v) => onChange({ ...a, values: a.values.map(() => v) })}
        />
      ) : (
        <label className="field inline">
          <span>V per token</span>
          <input
            type="text"
            defaultValue={a.values.join(', ')}
            key={a.values.length}
            data-testid={`sb-values-${id}`}
            aria-label={`action ${id} critic value per token`}
            onBlur={(e) => onChange({ ...a, values: a.values.map((v, k) => num(e.target.value.split(',')[k] ?? '', v)) })}
          />
        </label>
      )}
      <label className="field inline">
        <span>text</span>
        <input
          type="text"
          value={a.text}
          placeholder="(read by per_step helpers)"
          data-testid={`sb-text-${id}`}
          aria-label={`action ${id} text`}
          onChange={(e) => onChange({ ...a, text: e.target.value })}
        />
      </label>
      {scored && (
        <Num
          label={scored === 'coder' ? 'share of tests passed' : 'plan check (share right)'}
          value={a.score ?? 0}
          min={0}
          max={1}
          testId={`sb-score-${id}`}
          onChange={(v) => onChange({ ...a, score: v })}
        />
      )}
      {onRemove && (
        <button type="button" aria-label={`remove action ${id}`} onClick={onRemove}>
          ✕
        </button>
      )}
    </div>
  );
}

/** The computed numbers: one row per agent with its tokens coloured on the one shared scale, and the GAE terms. */
function Results({
  line,
  s,
  scale,
  active,
}: {
  line: InspectedLine;
  s: Sandbox;
  scale: { lo: number; hi: number };
  active: { action: number; token: number } | null;
}) {
  return (
    <table className="sb-results terms" data-testid="sb-results">
      <thead>
        <tr>
          <th>agent</th>
          <th>turn</th>
          <th>tokens: advantage A</th>
          <th>r</th>
          <th>V</th>
          <th>δ</th>
          <th>return</th>
        </tr>
      </thead>
      <tbody>
        {line.actions.map((a, ai) => (
          <tr key={ai} data-testid={`sb-row-${ai}`}>
            <th>{a.role}</th>
            <td>{a.turn + 1}</td>
            <td>
              {a.advantages.map((v, k) => (
                <span
                  key={k}
                  className={`tok sb-tok${active && active.action === ai && active.token === k ? ' sel' : ''}`}
                  data-testid={`sb-adv-${ai}-${k}`}
                  style={chipStyle(v, scale, 'advantage')}
                  title={`A = ${v}`}
                >
                  {v.toFixed(3)}
                </span>
              ))}
            </td>
            <td data-testid={`sb-r-${ai}`}>{a.rewards.map(fmt).join(' ')}</td>
            <td>{a.values ? a.values.map(fmt).join(' ') : s.algo === 'grpo' ? 'no critic' : '—'}</td>
            <td>{a.deltas ? a.deltas.map(fmt).join(' ') : '—'}</td>
            <td>{a.returns ? a.returns.map(fmt).join(' ') : '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function CreditSandbox() {
  const draft = useLab((st) => st.draft);
  const runConfig = useLab((st) => st.runConfig);
  const ins = useLab(selectInspector);
  const [recorded, setRecorded] = useState(false);
  const base = recorded && runConfig ? runConfig : draft;
  const roles = base.graph.agents.map((a) => a.role);
  const [s, setS] = useState<Sandbox>(() => defaultSandbox(roles, base));
  const [out, setOut] = useState<{ lines: InspectedLine[] | null; error: WorkerError | null }>({ lines: null, error: null });
  const [classroom, setClassroom] = useState(false);
  const [step, setStep] = useState(0);
  const [playing, setPlaying] = useState(false);
  const [lines, setLines] = useState<string[]>([]);
  const [pick, setPick] = useState('');

  // every change recomputes at once (the newest answer wins)
  useEffect(() => {
    let live = true;
    void creditSandbox(sandboxConfig(base, s), sandboxJsonl(s)).then((r) => {
      if (live) setOut(r.ok ? { lines: r.value, error: null } : { lines: null, error: r.error });
    });
    return () => {
      live = false;
    };
  }, [s, base]);

  const line = out.lines?.[0] ?? null;
  const chain = useMemo(() => (line ? gaeChain(line) : null), [line]);
  const scale = useMemo(
    () => sharedScale(out.lines ? out.lines.flatMap((l) => l.actions.map((a) => a.advantages)) : [], 'advantage'),
    [out.lines],
  );
  const at = chain && chain.length ? chain[Math.min(step, chain.length - 1)] : null;
  useEffect(() => setStep(0), [chain?.length]); // a different chain starts again from the end

  // classroom keys: space / → steps on, ← back (not while typing in a control)
  useEffect(() => {
    if (!classroom || !chain) return;
    const onKey = (e: KeyboardEvent) => {
      const tag = (e.target as HTMLElement).tagName;
      if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || tag === 'BUTTON') return;
      if (e.key === ' ' || e.key === 'ArrowRight') {
        e.preventDefault();
        setStep((k) => Math.min(k + 1, chain.length - 1));
      }
      if (e.key === 'ArrowLeft') {
        e.preventDefault();
        setStep((k) => Math.max(k - 1, 0));
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [classroom, chain]);
  useEffect(() => {
    if (!playing || !chain) return;
    const t = setInterval(() => setStep((k) => (k + 1 < chain.length ? k + 1 : (setPlaying(false), k))), 1200);
    return () => clearInterval(t);
  }, [playing, chain]);

  const edit = (f: (x: Sandbox) => Sandbox) => setS((x) => f(x));
  // the per_step helper a role's action is credited by (null under the other methods or with reward sharing)
  const helperOf = (role: string): StepRewardName | null =>
    s.method === 'per_step' && !s.rewardSharing ? (s.perStep[role] ?? 'team') : null;
  const setAction = (ti: number, ai: number, a: SandboxAction | null) =>
    edit((x) => ({
      ...x,
      turns: x.turns.map((t, i) =>
        i !== ti ? t : { ...t, actions: a ? t.actions.map((b, j) => (j === ai ? a : b)) : t.actions.filter((_, j) => j !== ai) },
      ),
    }));
  const loadRecorded = async () => {
    const got = await recordedEpisodeLines();
    if (!got) return;
    setLines(got);
    setRecorded(true);
    // the controls start from the run's own settings, so a recorded episode first shows what the trainer used
    const start = runConfig
      ? defaultSandbox(
          runConfig.graph.agents.map((a) => a.role),
          runConfig,
        )
      : s;
    // the episode open in Inspect, when one is: the sandbox starts from it
    const open = ins.selected !== null && got[ins.selected] !== undefined ? ins.selected : null;
    setPick(open === null ? '' : String(open));
    setS(open === null ? start : sandboxFromRecorded(got[open], start));
  };

  return (
    <div
      className={`card credit-sandbox${classroom ? ' classroom' : ''}`}
      data-testid="credit-sandbox"
      role="region"
      aria-label="Credit-assignment sandbox"
    >
      <div className="row spread">
        <h2>
          Credit-assignment sandbox{' '}
          <span className="hint">
            · computed by the trainer's own code (as <code>marft inspect</code>), no GPU needed
          </span>
        </h2>
        <div className="row">
          <label className="field inline">
            <input
              type="checkbox"
              checked={classroom}
              data-testid="sb-classroom"
              onChange={(e) => {
                setClassroom(e.target.checked);
                setStep(0);
              }}
            />{' '}
            <span>classroom mode</span>
          </label>
          <button type="button" data-testid="sb-close" onClick={() => patchInspector({ sandbox: false })}>
            Close
          </button>
        </div>
      </div>

      <div className="row sb-controls">
        <label className="field inline">
          <span>episode</span>
          <select
            data-testid="sb-source"
            aria-label="episode source"
            value={recorded ? 'recorded' : 'hand'}
            onChange={(e) => {
              if (e.target.value === 'hand') {
                setRecorded(false);
                setS(
                  defaultSandbox(
                    draft.graph.agents.map((a) => a.role),
                    draft,
                  ),
                );
              } else void loadRecorded();
            }}
          >
            <option value="hand">hand-made (agents of the Build graph)</option>
            <option value="recorded" disabled={!ins.episodes.length}>
              recorded{ins.iteration !== null ? ` (iteration ${ins.iteration + 1})` : ' (train an iteration first)'}
            </option>
          </select>
        </label>
        {recorded && lines.length > 0 && (
          <label className="field inline">
            <span>recorded episode</span>
            <select
              data-testid="sb-recorded"
              value={pick}
              onChange={(e) => {
                setPick(e.target.value);
                if (e.target.value !== '') setS(sandboxFromRecorded(lines[Number(e.target.value)], s));
              }}
            >
              <option value="" disabled>
                pick one
              </option>
              {lines.map((_, i) => (
                <option key={i} value={i}>
                  #{i}
                </option>
              ))}
            </select>
          </label>
        )}
        <label className="field inline">
          <span>algorithm</span>
          <select value={s.algo} data-testid="sb-algo" onChange={(e) => edit((x) => ({ ...x, algo: e.target.value as Sandbox['algo'] }))}>
            <option value="ppo">PPO (critic + GAE)</option>
            <option value="grpo">GRPO (group, no critic)</option>
          </select>
        </label>
        {s.algo === 'grpo' && (
          <label className="field inline">
            <span>GRPO groups</span>
            <select
              value={s.groupNorm}
              data-testid="sb-group-norm"
              onChange={(e) => edit((x) => ({ ...x, groupNorm: e.target.value as Sandbox['groupNorm'] }))}
            >
              <option value="pooled">all tokens of the task (AReaL)</option>
              <option value="agent_turn">per agent and call (AT-GRPO)</option>
            </select>
          </label>
        )}
        <label className="field inline">
          <span>level</span>
          <select
            value={s.level}
            data-testid="sb-level"
            onChange={(e) => edit((x) => ({ ...x, level: e.target.value as Sandbox['level'] }))}
          >
            <option value="action">action</option>
            <option value="token">token</option>
          </select>
        </label>
        <label className="field inline">
          <span>credit</span>
          <select
            value={s.method}
            data-testid="sb-method"
            onChange={(e) => edit((x) => ({ ...x, method: e.target.value as CreditMethod }))}
          >
            {METHODS.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        {s.method === 'step_discount' && (
          <Num
            label="discount d"
            value={s.discount}
            min={0}
            max={1}
            testId="sb-discount"
            onChange={(v) => edit((x) => ({ ...x, discount: v }))}
          />
        )}
        <label className="field inline">
          <input
            type="checkbox"
            checked={s.rewardSharing}
            data-testid="sb-sharing"
            onChange={(e) => edit((x) => ({ ...x, rewardSharing: e.target.checked }))}
          />{' '}
          <span>reward sharing</span>
        </label>
        {s.algo === 'ppo' && (
          <>
            <Num label="γ" value={s.gamma} min={0} max={1} testId="sb-gamma" onChange={(v) => edit((x) => ({ ...x, gamma: v }))} />
            <Num label="λ" value={s.lambda} min={0} max={1} testId="sb-lambda" onChange={(v) => edit((x) => ({ ...x, lambda: v }))} />
          </>
        )}
        <Num label="turns" value={s.turns.length} step={1} min={1} testId="sb-turns" onChange={(n) => edit((x) => setTurnCount(x, n))} />
      </div>
      {s.method === 'per_step' && (
        <div className="row sb-controls">
          <span className="hint">per_step helpers:</span>
          {[...new Set(s.turns.flatMap((t) => t.actions.map((a) => a.role)))].map((r) => (
            <label key={r} className="field inline">
              <span>{r}</span>
              <select
                value={s.perStep[r] ?? 'team'}
                data-testid={`sb-helper-${r}`}
                onChange={(e) => edit((x) => ({ ...x, perStep: { ...x.perStep, [r]: e.target.value as StepRewardName } }))}
              >
                {STEP_REWARD_NAMES.map((n) => (
                  <option key={n} value={n}>
                    {n}
                  </option>
                ))}
              </select>
            </label>
          ))}
        </div>
      )}

      <div className="sb-episode">
        {s.turns.map((t, ti) => (
          <fieldset key={ti} className="sb-turn">
            <legend>turn {ti + 1}</legend>
            <div className="row">
              <Num
                label="team reward R"
                value={t.reward}
                testId={`sb-reward-${ti}`}
                onChange={(v) => edit((x) => ({ ...x, turns: x.turns.map((u, i) => (i === ti ? { ...u, reward: v } : u)) }))}
              />
              {t.actions.some((a) => helperOf(a.role) === 'reviewer') && (
                <label className="field inline">
                  <input
                    type="checkbox"
                    checked={t.correct ?? t.reward > 0}
                    data-testid={`sb-correct-${ti}`}
                    onChange={(e) =>
                      edit((x) => ({ ...x, turns: x.turns.map((u, i) => (i === ti ? { ...u, correct: e.target.checked } : u)) }))
                    }
                  />{' '}
                  <span>team's answer right</span>
                </label>
              )}
              {s.algo === 'grpo' &&
                s.samples.map((rs, k) => (
                  <Num
                    key={k}
                    label={`sample ${k + 2} R`}
                    value={rs[ti]}
                    testId={`sb-sample-${k}-${ti}`}
                    onChange={(v) =>
                      edit((x) => ({ ...x, samples: x.samples.map((r, j) => (j === k ? r.map((y, i) => (i === ti ? v : y)) : r)) }))
                    }
                  />
                ))}
            </div>
            {t.actions.map((a, ai) => (
              <ActionEditor
                key={ai}
                id={`${ti}-${ai}`}
                a={a}
                roles={roles}
                level={s.level}
                scored={SCORE_STEP_REWARDS.find((h) => h === helperOf(a.role)) ?? null}
                onChange={(b) => setAction(ti, ai, b)}
                onRemove={t.actions.length > 1 ? () => setAction(ti, ai, null) : null}
              />
            ))}
            <button
              type="button"
              data-testid={`sb-add-action-${ti}`}
              onClick={() =>
                edit((x) => ({
                  ...x,
                  turns: x.turns.map((u, i) => (i === ti ? { ...u, actions: [...u.actions, newAction(roles[0])] } : u)),
                }))
              }
            >
              + action
            </button>
          </fieldset>
        ))}
        {s.algo === 'grpo' && (
          <div className="row">
            <span className="hint">
              GRPO group: this episode and {s.samples.length} hand-made sample{s.samples.length > 1 ? 's' : ''} of the same task (same
              actions, their own rewards)
            </span>
            <button
              type="button"
              data-testid="sb-add-sample"
              onClick={() => edit((x) => ({ ...x, samples: [...x.samples, x.turns.map(() => 0)] }))}
            >
              + sample
            </button>
            {s.samples.length > 1 && (
              <button type="button" onClick={() => edit((x) => ({ ...x, samples: x.samples.slice(0, -1) }))}>
                − sample
              </button>
            )}
          </div>
        )}
        <p className="hint">
          {recorded
            ? "Critic values V are the ones the run's critic gave this episode (edit them to see what changes). No KL penalty is added."
            : 'Critic values V are typed by hand (0 by default): a hand-made episode has no critic. No KL penalty is added (it has no log-probs).'}
        </p>
      </div>

      <p className="sb-explain" data-testid="sb-explain">
        {explainCredit(s)}
      </p>

      {out.error && (
        <p className="bad-text" role="alert" data-testid="sb-error">
          {out.error.message} {out.error.hint}
        </p>
      )}
      {line && (
        <>
          <div className="row">
            <span className="scale-legend" data-testid="sb-legend" aria-label="advantage colour scale">
              advantage{' '}
              {legendStops(scale, 'advantage').map((st, i) => (
                <span key={i} className="stop">
                  <span className="sw" style={{ background: st.color }} /> {st.value.toFixed(2)}
                </span>
              ))}
            </span>
            <span className="hint">one scale for every agent{out.lines!.length > 1 ? ' and sample' : ''}</span>
          </div>
          {out.lines!.map((l, i) => (
            <div key={l.id}>
              {out.lines!.length > 1 && <h3>sample {i + 1}</h3>}
              <Results line={l} s={s} scale={scale} active={i === 0 && classroom && at ? { action: at.action, token: at.token } : null} />
            </div>
          ))}
        </>
      )}

      {classroom && (
        <div className="sb-chain" data-testid="sb-chain" aria-live="polite">
          {!chain ? (
            <p>GRPO has no GAE chain: each advantage is a normalised reward (see above).</p>
          ) : (
            at && (
              <>
                <div className="sb-track" aria-hidden="true">
                  {chain
                    .slice()
                    .reverse()
                    .map((c, i) => {
                      const k = chain.length - 1 - i;
                      return (
                        <span
                          key={i}
                          className={`sb-node${k === step ? ' now' : k < step ? ' done' : ''}`}
                          style={chipStyle(k <= step ? c.a : null, scale, 'advantage')}
                        >
                          {c.role}
                          {s.level === 'token' ? ` ${c.token + 1}` : ''}
                        </span>
                      );
                    })}
                </div>
                <p data-testid="sb-chain-step">
                  step {step + 1} of {chain.length}, going back from the end: <b>{at.role}</b>, turn {at.turn + 1}
                  {s.level === 'token' ? `, token ${at.token + 1}` : ''}
                </p>
                <p className="eq">
                  δ = r + γ·V_next − V = {fmt(at.r)} + {s.gamma}·{fmt(at.vNext)} − {fmt(at.v)} = <b>{fmt(at.delta)}</b>
                </p>
                <p className="eq">
                  A = δ + γλ·A_next = {fmt(at.delta)} + {(s.gamma * s.lambda).toFixed(3)}·{fmt(at.aNext)} = <b>{fmt(at.a)}</b>
                </p>
                <div className="row">
                  <button type="button" data-testid="sb-prev" onClick={() => setStep((k) => Math.max(k - 1, 0))} disabled={step === 0}>
                    ← back
                  </button>
                  <button
                    type="button"
                    data-testid="sb-next"
                    onClick={() => setStep((k) => Math.min(k + 1, chain.length - 1))}
                    disabled={step >= chain.length - 1}
                  >
                    next →
                  </button>
                  <button
                    type="button"
                    data-testid="sb-play"
                    onClick={() => {
                      if (step >= chain.length - 1) setStep(0);
                      setPlaying((p) => !p);
                    }}
                  >
                    {playing ? 'Pause' : 'Play'}
                  </button>
                  <span className="hint">space or → steps on, ← goes back</span>
                </div>
              </>
            )
          )}
        </div>
      )}
    </div>
  );
}
