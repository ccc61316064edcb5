// The GAE terms of one token (or, at action level, of its action): V, r, gamma, lambda, where V_next and
// A_next come from (the next token, the next agent across the boundary, the next turn, the end), and the
// two lines of the recursion with the numbers in them.

import type { InspectAction, InspectToken, InspectedEpisode } from '../../worker/api.ts';
import { visibleText } from './colors.ts';

const f = (v: number | null | undefined, d = 4) => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : v.toFixed(d));

function nextLabel(t: InspectToken, level: string): string {
  const n = t.next!;
  switch (n.kind) {
    case 'token':
      return 'the next token of the same action';
    case 'agent':
      return `${level === 'token' ? 'the first token of ' : ''}${n.role}'s action — across the agent boundary (a Bellman backup)`;
    case 'turn':
      return `${level === 'token' ? 'the first token of ' : ''}${n.role}'s action on the next turn`;
    case 'end':
      return 'nothing: the episode ends here (V_next = A_next = 0)';
  }
}

export function GaeDetail({ ep, action, token }: { ep: InspectedEpisode; action: InspectAction; token: InspectToken }) {
  const { gamma, lambda } = ep;
  return (
    <div className="gae" data-testid="gae-detail">
      <h3>
        {action.role}, turn {action.turn + 1}, token “{visibleText(token.text)}” (id {token.id})
        <span className="hint">
          {' '}
          · {ep.level} level, credit {ep.method}
        </span>
      </h3>
      {token.delta === null || token.next === null ? (
        <p>
          GRPO: no critic;{' '}
          {ep.method === 'equal' ? (
            <>the advantage is the episode's reward normalised over its group, the same on every token</>
          ) : (
            <>
              the advantage is this action's reward-to-go (its own credited reward and every later one), normalised against the same action
              of the group's other samples
            </>
          )}
          : <b>A = {f(token.advantage)}</b>, as the update uses it (no further normalisation).
        </p>
      ) : (
        <>
          <table className="terms">
            <tbody>
              <tr>
                <th>V{ep.level === 'action' ? '(o) of the action' : ' of this token'}</th>
                <td>{f(token.value)}</td>
              </tr>
              <tr>
                <th>r (credited reward here)</th>
                <td>{f(token.reward)}</td>
              </tr>
              <tr>
                <th>γ, λ</th>
                <td>
                  {gamma}, {lambda}
                </td>
              </tr>
              <tr>
                <th>next step</th>
                <td>{nextLabel(token, ep.level)}</td>
              </tr>
              <tr>
                <th>V_next, A_next</th>
                <td>
                  {f(token.next.value)}, {f(token.next.advantage)}
                </td>
              </tr>
            </tbody>
          </table>
          <p className="eq">
            δ = r + γ·V_next − V = {f(token.reward)} + {gamma}·{f(token.next.value)} − {f(token.value)} = <b>{f(token.delta)}</b>
          </p>
          <p className="eq">
            A = δ + γλ·A_next = {f(token.delta)} + {(gamma * lambda).toFixed(4)}·{f(token.next.advantage)} = <b>{f(token.advantage)}</b>
          </p>
          <p className="eq">
            return = A + V = <b>{f(token.ret)}</b> (the critic's target)
          </p>
        </>
      )}
      <p className="hint">
        log π_old {f(token.oldLogp)}, log π_behaviour {f(token.behaviourLogp)} (ratio {f(token.ratio, 3)}), entropy {f(token.entropy, 3)},
        KL to reference {token.kl === null ? 'not computed (KL coef 0)' : f(token.kl)}
      </p>
    </div>
  );
}
