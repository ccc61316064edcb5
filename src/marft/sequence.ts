// The token layout of one episode at token level (the AReaL-based MARFT's layout): one concatenated
// sequence of T tokens; lossMask[t] = 1 only for generated tokens; agentId[t] = the acting agent's index
// for generated tokens and -1 for prompt, transition and feedback tokens. An action is a maximal run of
// generated tokens of one agent; its last token carries its credited reward.

import { marftFail } from './errors.ts';

export interface ActionSpan {
  agent: number;
  /** First token index. */
  start: number;
  /** One past the last token index. */
  end: number;
}

/** The actions of a sequence, in order. Checks that generated tokens have an agent id >= 0. */
export function actionSpans(lossMask: ArrayLike<number>, agentIds: ArrayLike<number>): ActionSpan[] {
  if (lossMask.length !== agentIds.length)
    marftFail('SHAPE', `actionSpans: lossMask has length ${lossMask.length}, agentIds ${agentIds.length}`);
  const spans: ActionSpan[] = [];
  for (let t = 0; t < lossMask.length; t++) {
    if (!lossMask[t]) continue;
    const a = agentIds[t];
    if (!(a >= 0)) marftFail('SHAPE', `actionSpans: token ${t} is generated (lossMask 1) but has agent id ${a}`);
    const last = spans[spans.length - 1];
    if (last && last.end === t && last.agent === a) last.end = t + 1;
    else spans.push({ agent: a, start: t, end: t + 1 });
  }
  return spans;
}

/** A length-T reward array with rewards[i] on the last token of spans[i] and 0 elsewhere. */
export function placeOnLastTokens(length: number, spans: readonly ActionSpan[], rewards: ArrayLike<number>): Float64Array {
  if (spans.length !== rewards.length) marftFail('SHAPE', `placeOnLastTokens: ${spans.length} actions but ${rewards.length} rewards`);
  const out = new Float64Array(length);
  spans.forEach((s, i) => {
    if (s.end < 1 || s.end > length) marftFail('SHAPE', `placeOnLastTokens: action ${i} ends at ${s.end}, outside the ${length} tokens`);
    out[s.end - 1] += rewards[i];
  });
  return out;
}
