// No network at run time: every request the page (and its workers) makes while it loads, probes the GPU,
// loads the built-in model and trains one iteration must stay on the lab's own origin (or be data: /
// blob:), and the Content-Security-Policy of index.html must not report a single violation. The policy
// allows the Hugging Face Hub's hosts for the opt-in Hub download (e2e/hub.spec.ts), and no other host;
// this run never opens that download, so none of them is contacted (the off-localhost check below).

import { expect, test } from '@playwright/test';
import { recordReliability } from '../scripts/reliability.ts';
import { openLab, tinySettings, waitForStatus } from './helpers.ts';

test.setTimeout(600_000);

const LOCAL = new Set(['127.0.0.1', 'localhost', '[::1]']);

test('the lab makes no request off localhost and breaks no CSP rule while it loads and trains', async ({ page, context }) => {
  const requests: string[] = [];
  const offsite: string[] = [];
  context.on('request', (r) => {
    const url = r.url();
    requests.push(url);
    const u = new URL(url);
    if (u.protocol === 'data:' || u.protocol === 'blob:') return;
    if (!LOCAL.has(u.hostname)) offsite.push(url);
  });
  const cspConsole: string[] = [];
  page.on('console', (m) => {
    if (/Content[- ]Security[- ]Policy/i.test(m.text())) cspConsole.push(m.text());
  });
  await page.addInitScript(() => {
    const w = window as unknown as { __csp: string[] };
    w.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => w.__csp.push(`${e.violatedDirective}: ${e.blockedURI}`));
  });

  const errors: string[] = [];
  await openLab(page, errors); // loads the page and waits for the GPU probe (worker + a kernel)
  const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("connect-src 'self'");
  const connect = /connect-src ([^;]*)/
    .exec(csp ?? '')![1]
    .split(/\s+/)
    .filter((h) => h !== "'self'");
  expect(
    connect.filter((h) => !/^https:\/\/([\w*-]+\.)*(huggingface\.co|hf\.co)$/.test(h)),
    "connect-src hosts other than the Hub's",
  ).toEqual([]);

  // the built-in model, one training iteration
  await tinySettings(page, 1);
  await expect(page.getByTestId('model-status')).toHaveAttribute('data-state', 'ready', { timeout: 120_000 });
  await page.getByTestId('start-training').click();
  await waitForStatus(page, 'done', 400_000);

  const violations = await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp);
  expect(offsite, `requests off localhost:\n${offsite.join('\n')}`).toEqual([]);
  expect(violations, 'CSP violations').toEqual([]);
  expect(cspConsole, 'CSP console messages').toEqual([]);
  expect(errors).toEqual([]);
  expect(requests.length).toBeGreaterThan(3);
  recordReliability('e2e-network', [
    {
      area: 'network (built app, Chromium)',
      fault: 'page load, GPU probe, built-in model load and 1 training iteration, watched for requests off localhost and CSP violations',
      cases: requests.length,
      outcome: `${requests.length} requests, all to localhost / data: / blob:; 0 CSP violations`,
      verdict: 'pass',
      test: 'e2e/network.spec.ts',
    },
  ]);
});
