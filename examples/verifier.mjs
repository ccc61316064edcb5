// A MARFT Lab environment module where a verifier's judgement is rewarded: a solver answers a small
// arithmetic problem as \boxed{N}, then a verifier, who sees the solver's answer, says whether it is right
// with \boxed{yes} or \boxed{no}. The team reward is half the solver's correctness and half whether the
// verifier judged it rightly, so a verifier that rubber-stamps every answer earns nothing on wrong ones.
// Use a graph solver -> verifier (the verifier sees the solver's output), e.g. the duo preset with roles
// renamed, or set the role names: options { solver: "planner", verifier: "solver" }.
// Options: solver, verifier (role names), max (operands in 1..max, default 20), horizon (default 1).

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

function lastBoxed(text) {
  const all = [...String(text).matchAll(/\\boxed\{([^{}]*)\}/g)];
  return all.length ? all[all.length - 1][1].trim() : null;
}

export default function createVerifierEnv(options = {}) {
  const solverRole = typeof options.solver === 'string' ? options.solver : 'solver';
  const verifierRole = typeof options.verifier === 'string' ? options.verifier : 'verifier';
  const max = Number.isInteger(options.max) && options.max >= 2 ? options.max : 20;
  const horizon = Number.isInteger(options.horizon) && options.horizon >= 1 ? options.horizon : 1;
  let problem = null;
  let turn = 0;
  return {
    name: 'verify',
    horizon,
    reset(seed) {
      const r = rng(seed);
      const a = 1 + Math.floor(r() * max);
      const b = 1 + Math.floor(r() * max);
      const op = r() < 0.5 ? '+' : '*';
      problem = { a, b, op, answer: op === '+' ? a + b : a * b };
      turn = 0;
      return {
        observation: {
          task: `${solverRole}: compute ${a} ${op} ${b} and give \\boxed{N}. ${verifierRole}: check the ${solverRole}'s answer and give \\boxed{yes} if it is right, \\boxed{no} if not.`,
        },
        info: { answer: problem.answer },
      };
    },
    step(actions) {
      if (!problem) throw new Error('step() before reset()');
      turn++;
      const given = lastBoxed(actions[solverRole] ?? '');
      const solved = given !== null && Number(given) === problem.answer;
      const verdict = (lastBoxed(actions[verifierRole] ?? '') ?? '').toLowerCase();
      const judged = verdict === 'yes' || verdict === 'no';
      const judgedRight = judged && (verdict === 'yes') === solved;
      const teamReward = 0.5 * (solved ? 1 : 0) + 0.5 * (judgedRight ? 1 : 0);
      return {
        teamReward,
        done: solved || turn >= horizon,
        correct: solved,
        feedback: `judge: the answer ${given ?? '(none)'} is ${solved ? 'right' : 'wrong'}; the verifier ${judged ? (judgedRight ? 'judged it rightly' : 'judged it wrongly') : 'gave no verdict'}`,
        rewards: { [solverRole]: solved ? 1 : 0, [verifierRole]: judgedRight ? 1 : 0 },
        answers: {
          [solverRole]: { answer: given, correct: solved },
          [verifierRole]: { answer: judged ? verdict : null, correct: judgedRight },
        },
        info: { verdict: judged ? verdict : null },
      };
    },
  };
}
