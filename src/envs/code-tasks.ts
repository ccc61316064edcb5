// The code environment's built-in task set: small JavaScript functions, easy to medium, each with a
// reference solution (kept for the test that checks every task against its own tests, and as an example
// of the expected answer) and tests that separate a right function from a wrong one: edge cases (empty
// input, negatives, ties) and at least two different expected outputs, so no constant function passes.
// The same records, without `solution`, are the JSONL dataset format (README.md, "Code environment").

import type { CodeTest } from './code-run.ts';

export interface CodeTask {
  id: string;
  /** What to write; the env adds the answer format. */
  prompt: string;
  /** The function the tests call. */
  entryPoint: string;
  tests: CodeTest[];
  split?: 'train' | 'test';
}

export interface BuiltinCodeTask extends CodeTask {
  solution: string;
}

const t = (input: unknown[], output: unknown): CodeTest => ({ input, output });

export const BUILTIN_CODE_TASKS: readonly BuiltinCodeTask[] = [
  {
    id: 'add',
    entryPoint: 'add',
    prompt: 'Write a function add(a, b) that returns the sum of the numbers a and b.',
    tests: [t([2, 3], 5), t([-4, 4], 0), t([0.5, 0.25], 0.75), t([-7, -8], -15)],
    solution: 'function add(a, b) { return a + b; }',
  },
  {
    id: 'max-of-three',
    entryPoint: 'maxOfThree',
    prompt: 'Write a function maxOfThree(a, b, c) that returns the largest of three numbers.',
    tests: [t([1, 2, 3], 3), t([9, -1, 4], 9), t([-5, -2, -9], -2), t([7, 7, 1], 7)],
    solution: 'function maxOfThree(a, b, c) { return Math.max(a, b, c); }',
  },
  {
    id: 'is-even',
    entryPoint: 'isEven',
    prompt: 'Write a function isEven(n) that returns true when the integer n is even and false otherwise (n may be negative).',
    tests: [t([4], true), t([7], false), t([0], true), t([-3], false), t([-10], true)],
    solution: 'function isEven(n) { return n % 2 === 0; }',
  },
  {
    id: 'factorial',
    entryPoint: 'factorial',
    prompt: 'Write a function factorial(n) that returns n! for an integer n >= 0 (0! = 1).',
    tests: [t([0], 1), t([1], 1), t([5], 120), t([10], 3628800)],
    solution: 'function factorial(n) { let r = 1; for (let i = 2; i <= n; i++) r *= i; return r; }',
  },
  {
    id: 'fibonacci',
    entryPoint: 'fib',
    prompt: 'Write a function fib(n) that returns the n-th Fibonacci number, with fib(0) = 0 and fib(1) = 1. n can be up to 70.',
    tests: [t([0], 0), t([1], 1), t([10], 55), t([20], 6765), t([70], 190392490709135)],
    solution: 'function fib(n) { let a = 0, b = 1; for (let i = 0; i < n; i++) [a, b] = [b, a + b]; return a; }',
  },
  {
    id: 'reverse-string',
    entryPoint: 'reverseString',
    prompt: 'Write a function reverseString(s) that returns the string s reversed.',
    tests: [t(['abc'], 'cba'), t([''], ''), t(['racecar'], 'racecar'), t(['Hello, World'], 'dlroW ,olleH')],
    solution: "function reverseString(s) { return s.split('').reverse().join(''); }",
  },
  {
    id: 'palindrome',
    entryPoint: 'isPalindrome',
    prompt:
      'Write a function isPalindrome(s) that returns true when s reads the same backwards, ignoring case and every character that is not a letter or a digit.',
    tests: [
      t(['A man, a plan, a canal: Panama'], true),
      t(['race a car'], false),
      t([''], true),
      t(['No lemon, no melon'], true),
      t(['ab'], false),
    ],
    solution:
      "function isPalindrome(s) { const c = s.toLowerCase().replace(/[^a-z0-9]/g, ''); return c === c.split('').reverse().join(''); }",
  },
  {
    id: 'count-vowels',
    entryPoint: 'countVowels',
    prompt: 'Write a function countVowels(s) that returns how many vowels (a, e, i, o, u, either case) the string s contains.',
    tests: [t(['hello'], 2), t(['xyz'], 0), t(['AEIOU aeiou'], 10), t([''], 0)],
    solution: 'function countVowels(s) { return (s.match(/[aeiou]/gi) || []).length; }',
  },
  {
    id: 'sum-array',
    entryPoint: 'sumArray',
    prompt: 'Write a function sumArray(xs) that returns the sum of an array of numbers (0 for an empty array).',
    tests: [t([[1, 2, 3]], 6), t([[]], 0), t([[-1, 1, -1]], -1), t([[10]], 10)],
    solution: 'function sumArray(xs) { return xs.reduce((a, b) => a + b, 0); }',
  },
  {
    id: 'array-max',
    entryPoint: 'arrayMax',
    prompt: 'Write a function arrayMax(xs) that returns the largest number of a non-empty array (all numbers may be negative).',
    tests: [t([[3, 1, 4, 1, 5]], 5), t([[-3, -1, -2]], -1), t([[42]], 42), t([[0, -0.5, 0.25]], 0.25)],
    solution: 'function arrayMax(xs) { return xs.reduce((a, b) => (b > a ? b : a)); }',
  },
  {
    id: 'fizzbuzz',
    entryPoint: 'fizzBuzz',
    prompt:
      'Write a function fizzBuzz(n) that returns an array of the strings for 1..n: "Fizz" for multiples of 3, "Buzz" for multiples of 5, "FizzBuzz" for both, else the number as a string.',
    tests: [
      t([5], ['1', '2', 'Fizz', '4', 'Buzz']),
      t([1], ['1']),
      t([15], ['1', '2', 'Fizz', '4', 'Buzz', 'Fizz', '7', '8', 'Fizz', 'Buzz', '11', 'Fizz', '13', '14', 'FizzBuzz']),
      t([0], []),
    ],
    solution:
      "function fizzBuzz(n) { const r = []; for (let i = 1; i <= n; i++) r.push(i % 15 === 0 ? 'FizzBuzz' : i % 3 === 0 ? 'Fizz' : i % 5 === 0 ? 'Buzz' : String(i)); return r; }",
  },
  {
    id: 'is-prime',
    entryPoint: 'isPrime',
    prompt: 'Write a function isPrime(n) that returns true when the integer n is a prime number (n may be 0, 1 or negative: not prime).',
    tests: [t([2], true), t([1], false), t([0], false), t([-7], false), t([97], true), t([91], false), t([7919], true)],
    solution:
      'function isPrime(n) { if (n < 2) return false; for (let d = 2; d * d <= n; d++) if (n % d === 0) return false; return true; }',
  },
  {
    id: 'gcd',
    entryPoint: 'gcd',
    prompt: 'Write a function gcd(a, b) that returns the greatest common divisor of two non-negative integers (gcd(0, 0) = 0).',
    tests: [t([12, 18], 6), t([17, 5], 1), t([0, 9], 9), t([0, 0], 0), t([100, 75], 25)],
    solution: 'function gcd(a, b) { while (b) [a, b] = [b, a % b]; return a; }',
  },
  {
    id: 'lcm',
    entryPoint: 'lcm',
    prompt: 'Write a function lcm(a, b) that returns the least common multiple of two positive integers.',
    tests: [t([4, 6], 12), t([7, 3], 21), t([5, 5], 5), t([12, 18], 36)],
    solution: 'function lcm(a, b) { const g = (x, y) => (y ? g(y, x % y) : x); return (a / g(a, b)) * b; }',
  },
  {
    id: 'digit-sum',
    entryPoint: 'digitSum',
    prompt: 'Write a function digitSum(n) that returns the sum of the decimal digits of the integer n (ignore its sign).',
    tests: [t([123], 6), t([0], 0), t([-45], 9), t([9999], 36)],
    solution: 'function digitSum(n) { return String(Math.abs(n)).split("").reduce((a, d) => a + Number(d), 0); }',
  },
  {
    id: 'capitalize-words',
    entryPoint: 'capitalizeWords',
    prompt:
      'Write a function capitalizeWords(s) that upper-cases the first letter of every space-separated word and leaves the other characters as they are.',
    tests: [t(['hello world'], 'Hello World'), t([''], ''), t(['a bC d'], 'A BC D'), t(['already Fine'], 'Already Fine')],
    solution: "function capitalizeWords(s) { return s.split(' ').map((w) => (w ? w[0].toUpperCase() + w.slice(1) : w)).join(' '); }",
  },
  {
    id: 'unique',
    entryPoint: 'unique',
    prompt:
      'Write a function unique(xs) that returns the values of the array xs without duplicates, in the order of their first appearance.',
    tests: [t([[1, 2, 1, 3, 2]], [1, 2, 3]), t([[]], []), t([['b', 'a', 'b']], ['b', 'a']), t([[5, 5, 5]], [5])],
    solution: 'function unique(xs) { return [...new Set(xs)]; }',
  },
  {
    id: 'flatten',
    entryPoint: 'flatten',
    prompt: 'Write a function flatten(xs) that flattens arbitrarily nested arrays into one flat array, keeping the order.',
    tests: [t([[1, [2, [3, [4]]], 5]], [1, 2, 3, 4, 5]), t([[]], []), t([[[[]], [1]]], [1]), t([[1, 2]], [1, 2])],
    solution: 'function flatten(xs) { return xs.flat(Infinity); }',
  },
  {
    id: 'chunk',
    entryPoint: 'chunk',
    prompt:
      'Write a function chunk(xs, size) that splits the array xs into consecutive pieces of length size (the last one may be shorter).',
    tests: [t([[1, 2, 3, 4, 5], 2], [[1, 2], [3, 4], [5]]), t([[], 3], []), t([[1, 2, 3], 3], [[1, 2, 3]]), t([[1, 2, 3], 5], [[1, 2, 3]])],
    solution:
      'function chunk(xs, size) { const r = []; for (let i = 0; i < xs.length; i += size) r.push(xs.slice(i, i + size)); return r; }',
  },
  {
    id: 'count-words',
    entryPoint: 'countWords',
    prompt:
      'Write a function countWords(s) that returns an object mapping each lower-cased word of s (words are runs of letters) to how many times it occurs.',
    tests: [
      t(['the cat and the hat'], { the: 2, cat: 1, and: 1, hat: 1 }),
      t([''], {}),
      t(['Go, go GO!'], { go: 3 }),
      t(['a b'], { a: 1, b: 1 }),
    ],
    solution:
      'function countWords(s) { const r = {}; for (const w of s.toLowerCase().match(/[a-z]+/g) || []) r[w] = (r[w] || 0) + 1; return r; }',
  },
  {
    id: 'anagrams',
    entryPoint: 'areAnagrams',
    prompt:
      'Write a function areAnagrams(a, b) that returns true when the strings a and b use the same letters the same number of times, ignoring case and spaces.',
    tests: [
      t(['listen', 'silent'], true),
      t(['Dormitory', 'dirty room'], true),
      t(['abc', 'abd'], false),
      t(['aab', 'abb'], false),
      t(['', ''], true),
    ],
    solution:
      "function areAnagrams(a, b) { const k = (s) => s.toLowerCase().replace(/ /g, '').split('').sort().join(''); return k(a) === k(b); }",
  },
  {
    id: 'balanced-brackets',
    entryPoint: 'isBalanced',
    prompt:
      'Write a function isBalanced(s) that returns true when every bracket (), [] and {} in s is closed in the right order; other characters are ignored.',
    tests: [t(['([]{})'], true), t(['(]'], false), t([''], true), t(['((a)'], false), t(['a{b[c]d}e'], true), t([')('], false)],
    solution:
      "function isBalanced(s) { const st = [], m = { ')': '(', ']': '[', '}': '{' }; for (const c of s) { if ('([{'.includes(c)) st.push(c); else if (c in m) { if (st.pop() !== m[c]) return false; } } return st.length === 0; }",
  },
  {
    id: 'binary-search',
    entryPoint: 'binarySearch',
    prompt:
      'Write a function binarySearch(xs, target) that returns the index of target in the sorted array xs of distinct numbers, or -1 when it is absent.',
    tests: [t([[1, 3, 5, 7, 9], 7], 3), t([[1, 3, 5], 4], -1), t([[], 1], -1), t([[2], 2], 0), t([[1, 2, 3, 4, 5, 6], 1], 0)],
    solution:
      'function binarySearch(xs, target) { let lo = 0, hi = xs.length - 1; while (lo <= hi) { const m = (lo + hi) >> 1; if (xs[m] === target) return m; if (xs[m] < target) lo = m + 1; else hi = m - 1; } return -1; }',
  },
  {
    id: 'roman',
    entryPoint: 'toRoman',
    prompt: 'Write a function toRoman(n) that returns the Roman numeral of an integer 1 <= n <= 3999 (e.g. 4 -> "IV", 1994 -> "MCMXCIV").',
    tests: [t([1], 'I'), t([4], 'IV'), t([9], 'IX'), t([58], 'LVIII'), t([1994], 'MCMXCIV'), t([3999], 'MMMCMXCIX')],
    solution:
      "function toRoman(n) { const v = [[1000, 'M'], [900, 'CM'], [500, 'D'], [400, 'CD'], [100, 'C'], [90, 'XC'], [50, 'L'], [40, 'XL'], [10, 'X'], [9, 'IX'], [5, 'V'], [4, 'IV'], [1, 'I']]; let r = ''; for (const [k, s] of v) while (n >= k) { r += s; n -= k; } return r; }",
  },
  {
    id: 'run-length',
    entryPoint: 'runLength',
    prompt:
      'Write a function runLength(s) that run-length encodes s: each run of the same character becomes the count followed by the character ("aaab" -> "3a1b").',
    tests: [t(['aaab'], '3a1b'), t([''], ''), t(['abc'], '1a1b1c'), t(['zzzzzzzzzzzz'], '12z')],
    solution:
      "function runLength(s) { let r = ''; for (let i = 0; i < s.length;) { let j = i; while (j < s.length && s[j] === s[i]) j++; r += (j - i) + s[i]; i = j; } return r; }",
  },
  {
    id: 'two-sum',
    entryPoint: 'twoSum',
    prompt:
      'Write a function twoSum(xs, target) that returns the indices [i, j], i < j, of the first pair (smallest j, then smallest i) whose values add up to target, or null when there is none.',
    tests: [t([[2, 7, 11, 15], 9], [0, 1]), t([[3, 2, 4], 6], [1, 2]), t([[1, 2], 7], null), t([[3, 3], 6], [0, 1])],
    solution:
      'function twoSum(xs, target) { for (let j = 1; j < xs.length; j++) for (let i = 0; i < j; i++) if (xs[i] + xs[j] === target) return [i, j]; return null; }',
  },
  {
    id: 'transpose',
    entryPoint: 'transpose',
    prompt:
      'Write a function transpose(m) that returns the transpose of a rectangular matrix given as an array of rows (an empty matrix stays empty).',
    tests: [
      t(
        [
          [
            [1, 2, 3],
            [4, 5, 6],
          ],
        ],
        [
          [1, 4],
          [2, 5],
          [3, 6],
        ],
      ),
      t([[]], []),
      t([[[7]]], [[7]]),
      t([[[1], [2]]], [[1, 2]]),
    ],
    solution: 'function transpose(m) { return m.length ? m[0].map((_, j) => m.map((row) => row[j])) : []; }',
  },
  {
    id: 'mean-median',
    entryPoint: 'median',
    prompt:
      'Write a function median(xs) that returns the median of a non-empty array of numbers (the mean of the two middle values when the length is even); do not change xs.',
    tests: [t([[3, 1, 2]], 2), t([[4, 1, 3, 2]], 2.5), t([[5]], 5), t([[-1, -3, 10, 2]], 0.5)],
    solution:
      'function median(xs) { const s = [...xs].sort((a, b) => a - b), m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; }',
  },
  {
    id: 'caesar',
    entryPoint: 'caesar',
    prompt:
      'Write a function caesar(s, k) that shifts every letter of s by k places in the alphabet (wrapping around, keeping case; k may be negative); other characters stay.',
    tests: [
      t(['abc', 1], 'bcd'),
      t(['xyz', 3], 'abc'),
      t(['Hello, World!', 13], 'Uryyb, Jbeyq!'),
      t(['bcd', -1], 'abc'),
      t(['a', 52], 'a'),
    ],
    solution:
      "function caesar(s, k) { return s.replace(/[a-z]/gi, (c) => { const b = c <= 'Z' ? 65 : 97; return String.fromCharCode(((c.charCodeAt(0) - b + k) % 26 + 26) % 26 + b); }); }",
  },
  {
    id: 'group-by-length',
    entryPoint: 'groupByLength',
    prompt:
      'Write a function groupByLength(words) that returns an object mapping each word length to the array of words of that length, in input order.',
    tests: [
      t([['a', 'bb', 'c', 'dd', 'eee']], { 1: ['a', 'c'], 2: ['bb', 'dd'], 3: ['eee'] }),
      t([[]], {}),
      t([['same', 'four']], { 4: ['same', 'four'] }),
    ],
    solution: 'function groupByLength(words) { const r = {}; for (const w of words) (r[w.length] ||= []).push(w); return r; }',
  },
  {
    id: 'longest-common-prefix',
    entryPoint: 'commonPrefix',
    prompt: 'Write a function commonPrefix(words) that returns the longest common prefix of an array of strings ("" for an empty array).',
    tests: [
      t([['flower', 'flow', 'flight']], 'fl'),
      t([['dog', 'racecar', 'car']], ''),
      t([[]], ''),
      t([['alone']], 'alone'),
      t([['ab', 'abc', 'abd']], 'ab'),
    ],
    solution:
      "function commonPrefix(words) { if (!words.length) return ''; let p = words[0]; for (const w of words) while (!w.startsWith(p)) p = p.slice(0, -1); return p; }",
  },
  {
    id: 'matrix-multiply',
    entryPoint: 'matMul',
    prompt:
      'Write a function matMul(a, b) that returns the product of the matrices a (n x k) and b (k x m), each given as an array of rows.',
    tests: [
      t(
        [
          [
            [1, 2],
            [3, 4],
          ],
          [
            [5, 6],
            [7, 8],
          ],
        ],
        [
          [19, 22],
          [43, 50],
        ],
      ),
      t([[[1, 2, 3]], [[1], [2], [3]]], [[14]]),
      t([[[2]], [[3]]], [[6]]),
      t(
        [[[1], [2]], [[3, 4]]],
        [
          [3, 4],
          [6, 8],
        ],
      ),
    ],
    solution: 'function matMul(a, b) { return a.map((row) => b[0].map((_, j) => row.reduce((s, x, k) => s + x * b[k][j], 0))); }',
  },
  {
    id: 'prime-factors',
    entryPoint: 'primeFactors',
    prompt:
      'Write a function primeFactors(n) that returns the prime factors of an integer n >= 2 in increasing order, with repetition (12 -> [2, 2, 3]).',
    tests: [t([12], [2, 2, 3]), t([13], [13]), t([360], [2, 2, 2, 3, 3, 5]), t([2], [2]), t([9973 * 2], [2, 9973])],
    solution:
      'function primeFactors(n) { const r = []; for (let d = 2; d * d <= n; d++) while (n % d === 0) { r.push(d); n /= d; } if (n > 1) r.push(n); return r; }',
  },
  {
    id: 'merge-intervals',
    entryPoint: 'mergeIntervals',
    prompt:
      'Write a function mergeIntervals(xs) that merges overlapping or touching intervals [start, end] and returns them sorted by start.',
    tests: [
      t(
        [
          [
            [1, 3],
            [2, 6],
            [8, 10],
            [15, 18],
          ],
        ],
        [
          [1, 6],
          [8, 10],
          [15, 18],
        ],
      ),
      t(
        [
          [
            [1, 4],
            [4, 5],
          ],
        ],
        [[1, 5]],
      ),
      t([[]], []),
      t(
        [
          [
            [5, 6],
            [1, 2],
          ],
        ],
        [
          [1, 2],
          [5, 6],
        ],
      ),
      t(
        [
          [
            [1, 10],
            [2, 3],
          ],
        ],
        [[1, 10]],
      ),
    ],
    solution:
      'function mergeIntervals(xs) { const s = xs.map((x) => [...x]).sort((a, b) => a[0] - b[0]), r = []; for (const x of s) { const l = r[r.length - 1]; if (l && x[0] <= l[1]) l[1] = Math.max(l[1], x[1]); else r.push(x); } return r; }',
  },
  {
    id: 'word-frequency-top',
    entryPoint: 'topWord',
    prompt:
      'Write a function topWord(s) that returns the most frequent lower-cased word of s (words are runs of letters); on a tie, the one that comes first alphabetically; null when s has no word.',
    tests: [t(['b a b a c'], 'a'), t(['Dog dog cat'], 'dog'), t(['...'], null), t(['zeta'], 'zeta')],
    solution:
      'function topWord(s) { const c = {}; for (const w of s.toLowerCase().match(/[a-z]+/g) || []) c[w] = (c[w] || 0) + 1; let best = null; for (const w of Object.keys(c).sort()) if (best === null || c[w] > c[best]) best = w; return best; }',
  },
  {
    id: 'power-set-size',
    entryPoint: 'subsetsWithSum',
    prompt:
      'Write a function subsetsWithSum(xs, target) that returns how many subsets of the array xs (by position; the empty subset included) have values summing to target.',
    tests: [t([[1, 2, 3], 3], 2), t([[], 0], 1), t([[1, 1, 1], 2], 3), t([[5, 10], 7], 0)],
    solution:
      'function subsetsWithSum(xs, target) { let n = 0; for (let m = 0; m < 1 << xs.length; m++) { let s = 0; for (let i = 0; i < xs.length; i++) if (m & (1 << i)) s += xs[i]; if (s === target) n++; } return n; }',
  },
];
