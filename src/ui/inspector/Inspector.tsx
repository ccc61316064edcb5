// The Inspect tab: the episodes of an iteration the run keeps (a picker over the last ones; the one in
// view stays while newer iterations end); each agent's output with every token coloured by advantage (or
// value, reward, ratio, KL) on one scale shared by the columns; click a token (or reach it with Tab and the
// arrow keys: a column is one Tab stop) for its GAE terms; the same episode under another credit assignment
// strategy side by side, each column saying what its method does; download the iteration's episodes as the
// JSONL that `marft inspect` reads; and the credit-assignment sandbox, open without any run.

import { useEffect, useRef, useState } from 'react';
import type { CreditMethod, InspectedEpisode } from '../../worker/api.ts';
import { downloadEpisodes, inspect, pickIteration, setCompare } from '../actions.ts';
import { patchInspector, selectInspector, selectRunConfig, useLab } from '../store.ts';
import { explainMethod, methodSettings } from './credit-text.ts';
import { COLOR_BY, type ColorBy, chipStyle, legendStops, sharedScale, tokenMetric, visibleText } from './colors.ts';
import { CreditSandbox } from './CreditSandbox.tsx';
import { GaeDetail } from './GaeDetail.tsx';
import { OpenDemo } from '../runs/OpenDemo.tsx';

const METHODS: CreditMethod[] = ['equal', 'step_discount', 'per_step'];

type Scale = { lo: number; hi: number };

/** Every token's number of the episodes in view (both columns when comparing), for the one shared scale. */
const columnsOf = (eps: InspectedEpisode[], by: ColorBy) =>
  eps.map((ep) => ep.actions.flatMap((a) => a.tokens.map((t) => tokenMetric(t, by))));

function EpisodeView({ ep, side, scale }: { ep: InspectedEpisode; side: 0 | 1; scale: Scale }) {
  const ins = useLab(selectInspector);
  const config = useLab(selectRunConfig);
  const by = ins.colorBy;
  const turnRoles = ep.actions.filter((a) => a.turn === 0).map((a) => a.role);
  // one Tab stop per column (the selected token, else the last one focused); arrow keys move inside it
  const col = useRef<HTMLDivElement>(null);
  const starts: number[] = []; // each action's first token, counted over the column
  let count = 0;
  for (const a of ep.actions) {
    starts.push(count);
    count += a.tokens.length;
  }
  const [cursor, setCursor] = useState(0);
  useEffect(() => setCursor(0), [ep.index, ep.iteration]);
  const selected = ins.token?.side === side ? starts[ins.token.action] + ins.token.token : null;
  const stop = Math.min(selected ?? cursor, Math.max(0, count - 1));
  const at = (k: number): [number, number] => {
    const ai = starts.findLastIndex((st) => st <= k);
    return [ai, k - starts[ai]];
  };
  const focusToken = (k: number) => {
    const next = Math.max(0, Math.min(count - 1, k));
    setCursor(next);
    col.current?.querySelectorAll<HTMLElement>('[data-testid="token"]')[next]?.focus();
  };
  const onKey = (e: React.KeyboardEvent, k: number) => {
    const [ai, ti] = at(k);
    const to: Record<string, number | undefined> = {
      ArrowRight: k + 1,
      ArrowLeft: k - 1,
      Home: 0,
      End: count - 1,
      ArrowDown: starts[ai + 1],
      ArrowUp: ti > 0 ? starts[ai] : starts[ai - 1],
    };
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      patchInspector({ token: { side, action: ai, token: ti } });
    } else if (e.key in to) {
      e.preventDefault();
      if (to[e.key] !== undefined) focusToken(to[e.key]!);
    }
  };
  return (
    <div className="episode-col" data-testid={`episode-view-${side}`} ref={col}>
      <h3>
        credit: {ep.method}{' '}
        <span className="hint">
          ({ep.level} level, {ep.algo}, γ {ep.gamma}, λ {ep.lambda})
        </span>
      </h3>
      {config && (
        <p className="hint method-explain" data-testid={`method-explain-${side}`}>
          {explainMethod(methodSettings(config, ep.method, turnRoles))}.
        </p>
      )}
      {ep.actions.map((a, ai) => (
        <div key={ai} className="action">
          <div className="action-head">
            <b>{a.role}</b>{' '}
            <span className="hint">
              turn {a.turn + 1} · credited reward {a.reward.toFixed(3)} · {a.tokens.length} tokens
            </span>
          </div>
          <div className="tokens" role="group" aria-label={`${a.role}'s tokens: arrow keys move, Enter shows a token's GAE terms`}>
            {a.tokens.map((t, ti) => {
              const v = tokenMetric(t, by);
              const sel = ins.token?.side === side && ins.token.action === ai && ins.token.token === ti;
              const k = starts[ai] + ti;
              return (
                <span
                  key={ti}
                  className={`tok${sel ? ' sel' : ''}`}
                  style={chipStyle(v, scale, by)}
                  data-testid="token"
                  role="button"
                  tabIndex={k === stop ? 0 : -1}
                  aria-pressed={sel}
                  aria-label={`${JSON.stringify(t.text)}, ${by} ${v === null ? 'n/a' : v.toFixed(4)}`}
                  title={`${by}: ${v === null ? 'n/a' : v.toFixed(4)}`}
                  onClick={() => patchInspector({ token: { side, action: ai, token: ti } })}
                  onFocus={() => setCursor(k)}
                  onKeyDown={(e) => onKey(e, k)}
                >
                  {visibleText(t.text)}
                </span>
              );
            })}
          </div>
        </div>
      ))}
      <p className="hint">
        {ep.feedback
          .filter(Boolean)
          .map((f, i) => `turn ${i + 1}: ${f}`)
          .join(' · ')}
      </p>
    </div>
  );
}

function Legend({ by, scale }: { by: ColorBy; scale: Scale | null }) {
  if (!scale) return <span className="scale-legend hint">{by}: colours appear with an episode</span>;
  return (
    <span className="scale-legend" data-testid="scale-legend" aria-label={`${by} colour scale`}>
      {by === 'ratio' ? 'log ratio' : by}{' '}
      {legendStops(scale, by).map((st, i) => (
        <span key={i} className="stop">
          <span className="sw" style={{ background: st.color }} /> {st.value.toFixed(3)}
        </span>
      ))}
    </span>
  );
}

export function Inspector() {
  const ins = useLab(selectInspector);
  const tokenEp = ins.token ? (ins.token.side === 0 ? ins.primary : ins.secondary) : null;
  const action = tokenEp && ins.token ? tokenEp.actions[ins.token.action] : null;
  const token = action && ins.token ? action.tokens[ins.token.token] : null;
  const shown = [ins.primary, ins.secondary].filter((e): e is InspectedEpisode => e !== null);
  const scale = shown.length ? sharedScale(columnsOf(shown, ins.colorBy), ins.colorBy) : null;
  return (
    <>
      {ins.sandbox && <CreditSandbox />}
      <div className="inspector card" data-testid="token-inspector">
        <div className="row spread">
          <h2>
            Credit assignment, token by token{' '}
            {ins.iteration !== null && (
              <span className="hint" data-testid="inspect-iteration">
                · iteration {ins.iteration + 1} of the run
                {ins.newest !== null && ins.newest > ins.iteration ? `; newer: ${ins.newest + 1}` : ''}
              </span>
            )}
          </h2>
          <div className="row">
            {!ins.sandbox && (
              <button
                type="button"
                data-testid="sandbox-open"
                title="Build an episode by hand (or take a recorded one) and see how each credit setting changes every agent's advantage; needs no GPU or run"
                onClick={() => patchInspector({ sandbox: true })}
              >
                Credit sandbox
              </button>
            )}
            {ins.kept.length > 1 && (
              <label className="field inline">
                <span>iteration</span>
                <select value={ins.iteration ?? ''} data-testid="iteration-picker" onChange={(e) => pickIteration(Number(e.target.value))}>
                  {ins.kept.map((k) => (
                    <option key={k.iteration} value={k.iteration}>
                      {k.iteration + 1}
                      {k.iteration === ins.newest ? ' (newest)' : ''}
                    </option>
                  ))}
                </select>
              </label>
            )}
            <label className="field inline">
              <span>colour by</span>
              <select value={ins.colorBy} data-testid="color-by" onChange={(e) => patchInspector({ colorBy: e.target.value as ColorBy })}>
                {COLOR_BY.map((c) => (
                  <option key={c} value={c}>
                    {c}
                  </option>
                ))}
              </select>
            </label>
            <label className="field inline">
              <span>compare with</span>
              <select
                value={ins.compare ?? ''}
                data-testid="compare-method"
                onChange={(e) => void setCompare((e.target.value || null) as CreditMethod | null)}
              >
                <option value="">—</option>
                {METHODS.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>
            </label>
            <Legend by={ins.colorBy} scale={scale} />
            <button
              type="button"
              data-testid="export-episodes"
              disabled={!ins.episodes.length}
              title="The episodes of this iteration as JSONL, the input of marft inspect"
              onClick={() => void downloadEpisodes()}
            >
              Download episodes (JSONL)
            </button>
          </div>
        </div>
        {!ins.episodes.length ? (
          <p className="hint">
            Train an iteration: its episodes appear here, or <OpenDemo where="inspect" /> to explore a recorded one. The credit sandbox
            works now, without training.
          </p>
        ) : (
          <div className="inspector-body">
            <ul className="episode-list" data-testid="episode-list">
              {ins.episodes.map((e) => (
                <li key={e.index}>
                  <button
                    type="button"
                    className={ins.selected === e.index ? 'active' : ''}
                    data-testid={`episode-${e.index}`}
                    onClick={() => void inspect(e.index)}
                  >
                    <span className={e.correct ? 'ok-text' : 'bad-text'}>{e.correct ? '✓' : '✗'}</span> #{e.index} {e.task.slice(0, 40)}
                    {e.task.length > 40 ? '…' : ''}
                    <span className="hint"> answer {e.answer ?? '—'}</span>
                  </button>
                </li>
              ))}
            </ul>
            <div className="episode-main">
              {ins.loading && <p className="hint">Computing…</p>}
              {ins.primary && (
                <>
                  <p className="task">
                    <b>Task:</b> {ins.primary.task}{' '}
                    <span className={ins.primary.correct ? 'ok-text' : 'bad-text'}>{ins.primary.correct ? 'solved' : 'not solved'}</span>
                  </p>
                  {token && action && tokenEp && <GaeDetail ep={tokenEp} action={action} token={token} />}
                  <div className={`episode-cols${ins.secondary ? ' split' : ''}`}>
                    <EpisodeView ep={ins.primary} side={0} scale={scale!} />
                    {ins.secondary && <EpisodeView ep={ins.secondary} side={1} scale={scale!} />}
                  </div>
                </>
              )}
              {!ins.primary && !ins.loading && <p className="hint">Pick an episode.</p>}
            </div>
          </div>
        )}
      </div>
    </>
  );
}
