// The built-in arithmetic environment: seeded synthetic problems with exact integer answers, so the lab
// has a task out of the box (and tiny models can learn it). Difficulty sets the number of operations
// (1 to 4) and the operand range; every answer is an integer (divisions are exact by construction).

import { Rng } from '../common/rng.ts';
import { envFail } from './errors.ts';
import { MathEnv, type Problem } from './mathEnv.ts';
import type { EnvOptions } from './types.ts';

export interface ArithmeticOptions extends EnvOptions {
  /** 1..4: number of operations; operands grow with it. Default 2. */
  difficulty?: number;
}

export function arithmeticProblem(seed: number, difficulty = 2): Problem {
  const rng = Rng.fromSeed(`arithmetic:${seed}`);
  const max = [0, 20, 50, 100, 1000][difficulty];
  const num = () => 1 + rng.int(max);
  let value = num();
  let expr = String(value);
  const wrap = (e: string) => (e.includes(' ') ? `(${e})` : e);
  for (let k = 0; k < difficulty; k++) {
    const op = rng.int(4);
    if (op === 0) {
      const b = num();
      expr = `${expr} + ${b}`;
      value += b;
    } else if (op === 1) {
      const b = num();
      expr = `${expr} - ${b}`;
      value -= b;
    } else if (op === 2) {
      const b = 2 + rng.int(9);
      expr = `${wrap(expr)} * ${b}`;
      value *= b;
    } else {
      // Exact division: pick a divisor of the current value (1 excluded when possible).
      const divisors: number[] = [];
      const v = Math.abs(value);
      for (let d = 2; d <= Math.min(v, 12); d++) if (v % d === 0) divisors.push(d);
      if (divisors.length === 0) {
        const b = num();
        expr = `${expr} + ${b}`;
        value += b;
      } else {
        const b = divisors[rng.int(divisors.length)];
        expr = `${wrap(expr)} / ${b}`;
        value /= b;
      }
    }
  }
  return { problem: `Compute ${expr}.`, answer: String(value), id: seed };
}

export function createArithmeticEnv(options: ArithmeticOptions = {}): MathEnv {
  const difficulty = options.difficulty ?? 2;
  if (!Number.isInteger(difficulty) || difficulty < 1 || difficulty > 4) {
    envFail('ENV_OPTIONS', `arithmetic: difficulty must be an integer in 1..4, got ${JSON.stringify(options.difficulty)}`);
  }
  return new MathEnv('arithmetic', (seed) => arithmeticProblem(seed, difficulty), options.horizon);
}
