// A MARFT Lab environment module: guess a hidden number in a few turns, with "higher" / "lower" feedback
// between turns (a multi-turn task: the agents see the feedback of every earlier turn).
// Options: max (the number is in 1..max, default 16), horizon (turns, default 4).
// Reward: 1 for a right guess on the first turn, 0.25 less per extra turn (at least 0.25), 0 when never found.
// Check it with: marft env test --module examples/guess.mjs --seeds 5 --texts '["\\boxed{8}", "\\boxed{4}"]'

/** Mulberry32: every number of an episode comes from its seed (the lab checks determinism per seed). */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The last \boxed{...} of a text, as an integer, or null. */
function boxedInt(text) {
  const all = [...String(text).matchAll(/\\boxed\{\s*(-?\d+)\s*\}/g)];
  return all.length ? Number(all[all.length - 1][1]) : null;
}

export default function createGuessEnv(options = {}) {
  const max = Number.isInteger(options.max) && options.max >= 2 ? options.max : 16;
  const horizon = Number.isInteger(options.horizon) && options.horizon >= 1 ? options.horizon : 4;
  let target = null;
  let turn = 0;
  return {
    name: 'guess',
    horizon,
    reset(seed) {
      target = 1 + Math.floor(rng(seed)() * max);
      turn = 0;
      return {
        observation: {
          task: `I am thinking of a whole number from 1 to ${max}. Guess it and give your guess as \\boxed{N}. After a wrong guess you hear whether it is higher or lower.`,
        },
        info: { target, max },
      };
    },
    step(actions, { answerRoles } = {}) {
      if (target === null) throw new Error('step() before reset()');
      turn++;
      const roles = answerRoles?.length ? answerRoles.filter((r) => r in actions) : Object.keys(actions);
      const answers = {};
      let guess = null;
      for (const role of roles) {
        const g = boxedInt(actions[role]);
        answers[role] = { answer: g === null ? null : String(g), correct: g === target };
        if (g !== null) guess = g; // the team's guess: the last answering role that gave one
      }
      const correct = guess === target;
      const teamReward = correct ? Math.max(0.25, 1 - 0.25 * (turn - 1)) : 0;
      const feedback =
        guess === null
          ? 'judge: no guess found; answer with \\boxed{N}'
          : correct
            ? `judge: ${guess} is right`
            : `judge: ${guess} is wrong, the number is ${guess < target ? 'higher' : 'lower'}`;
      return { teamReward, done: correct || turn >= horizon, feedback, correct, answers, info: { turn, guess } };
    },
  };
}
