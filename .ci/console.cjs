// The person's walk through the web console in headless Chromium, run by
// .ci/console.sh (which sets the environment below). Fails on the first
// step that does not hold, or on any serious or critical axe-core finding.
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const path = require('path');

const env = (name) => {
  const v = process.env[name];
  if (v === undefined) throw new Error(`console.cjs: ${name} is not set`);
  return v;
};
const base = env('BASE');
const agentKey = env('AGENT_KEY');
const personKey = env('PERSON_KEY');
const approveID = env('APPROVE_ID');
const supersededID = env('SUPERSEDED_ID');
const handover102 = env('HANDOVER_102');
const handover103 = env('HANDOVER_103');
const question = env('QUESTION');
const shots = process.env.SCREENSHOTS || '';
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

function check(ok, what) {
  if (!ok) throw new Error(`console.cjs: ${what}`);
  console.log(`ok: ${what}`);
}

const audited = [];
async function audit(page, name) {
  await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of result.violations) {
    console.log(`axe ${name}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.length})`);
  }
  check(bad.length === 0, `axe-core on ${name}: no serious or critical violations`);
  audited.push(name);
  if (shots) {
    await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: false });
  }
}

async function text(page) {
  return await page.locator('main').innerText();
}

(async () => {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  // The console's pages forbid inline scripts; axe-core is injected as one.
  const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1100, height: 720 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);

  let resp = await page.goto(`${base}/`);
  check(resp.status() === 200, 'the landing page answers');
  await audit(page, 'landing');
  await page.click('text=API reference');
  check(page.url() === `${base}/docs`, 'the landing page links to /docs');
  const docs = await text(page);
  check(docs.includes('post_invoice') && docs.includes('next_action') && docs.includes('TOLERANCE_EXCEEDED'),
    '/docs shows the operations and the codes');
  await audit(page, 'docs');
  resp = await page.goto(`${base}/redoc`);
  check(page.url() === `${base}/docs`, '/redoc leads to /docs');

  // An agent's key cannot sign in.
  await page.goto(`${base}/console`);
  check(page.url().startsWith(`${base}/console/sign-in`), '/console asks to sign in');
  await audit(page, 'sign-in');
  await page.fill('#key', agentKey);
  [resp] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  check(resp.status() === 409 && (await text(page)).includes('SCOPE_MISSING'), "an agent's key is refused: SCOPE_MISSING");
  await audit(page, 'refused');
  resp = await page.goto(`${base}/console/handovers`);
  check(page.url().startsWith(`${base}/console/sign-in`), "after the agent's try nobody is signed in");

  // A form without its CSRF token is refused.
  await page.fill('#key', personKey);
  await page.evaluate(() => document.querySelector('input[name=csrf_token]').remove());
  [resp] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  const refusal = await text(page);
  check(resp.status() === 403 && refusal.includes('INVALID_REQUEST') && refusal.includes('csrf_token'),
    'a form without its CSRF token is refused, naming csrf_token');

  // The person signs in.
  await page.goto(`${base}/console/sign-in`);
  await page.fill('#key', personKey);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  check(page.url() === `${base}/console/handovers`, 'the approver signs in and lands on the handovers');
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === 'erpgate_console');
  check(session && session.httpOnly && session.sameSite === 'Strict', 'the session cookie is HttpOnly and SameSite=Strict');
  await audit(page, 'handovers');

  // The README's run-0042 handover, with its errors.
  await page.click(`a[href="/console/handovers/${handover103}"]`);
  let body = await text(page);
  check(body.includes('PO_NOT_FOUND') && body.includes('LOOP_DETECTED') && body.includes('fix_input_and_retry') &&
    body.includes('run-0042'), `handover ${handover103} shows the run's errors with their fields`);

  // The TOLERANCE_EXCEEDED handover of 5105600102: its errors, evidence and run.
  await page.goto(`${base}/console/handovers?queue=ap_queue`);
  await page.click(`a[href="/console/handovers/${handover102}"]`);
  body = await text(page);
  check(body.includes('5105600102') && body.includes('TOLERANCE_EXCEEDED') && body.includes('APPROVAL_MISSING') &&
    body.includes('hold_and_recheck') && body.includes('raw-material surcharge') && body.includes('run-0102'),
    `handover ${handover102} shows the code, the APPROVAL_MISSING error, the evidence and the run`);
  await audit(page, 'handover');
  await Promise.all([page.waitForNavigation(), page.click('text=Take this handover')]);
  check((await page.locator('#handover-status').innerText()) === 'taken', 'the person takes the handover');

  // The superseded proposal cannot be decided.
  await page.goto(`${base}/console/approvals?status=superseded`);
  check((await page.locator(`tr#approval-${supersededID}`).count()) === 1, `${supersededID} is in the superseded approvals`);
  await audit(page, 'approvals-superseded');
  await page.click(`tr#approval-${supersededID} a[href^="/console/approvals/${supersededID}"]`);
  body = await text(page);
  check(body.includes('can no longer be decided') && (await page.locator('main p a').filter({ hasText: approveID }).count()) === 1,
    `${supersededID} says it was superseded by ${approveID}`);
  check((await page.locator('main form').count()) === 0, `${supersededID} offers no decision`);

  // The queue: the count in the navigation, the pending approval only.
  await page.click('nav >> text=Approvals');
  check((await page.locator('nav .count').innerText()) === '1', 'the navigation counts 1 approval waiting');
  body = await text(page);
  check(body.includes(approveID) && body.includes('13,500.00 EUR') && body.includes('accept the variance') &&
    body.includes('100042') && !body.includes(supersededID),
  'the queue shows the pending approval with its amount grouped, its proposal and supplier, and only it');
  await audit(page, 'approvals');

  // The approval of 5105600102 is its invoice's case, with the evidence.
  await page.click(`a[href^="/console/approvals/${approveID}"]`);
  check(page.url().startsWith(`${base}/console/approvals/${approveID}`), `the queue leads to approval ${approveID}`);
  const evidence = async (id) => {
    const b = await text(page);
    const exceeding = await page.locator('#exceeding').innerText();
    check(b.includes('Acme Industrial Supplies GmbH') && b.includes('ACME-2026-0419') && b.includes('13,500.00 EUR'),
      `approval ${id}: the supplier's name, its invoice reference and the gross amount`);
    check(exceeding.includes('PO 4500018823') && exceeding.includes('135.00 EUR against 125.00 EUR on the PO') &&
      exceeding.includes('8 % variance') && exceeding.includes('2 % / 50.00 EUR'),
    `approval ${id}: PO 4500018823, 135.00 against 125.00, the 8 % variance against the 2 % / 50.00 tolerance`);
    const match = await page.locator('#three-way-match').innerText();
    check(match.includes('4500018823 item 10') && match.includes('100 EA') && match.includes('over the tolerance'),
      `approval ${id}: the three-way match line by line`);
    return b;
  };
  body = await evidence(approveID);
  check(body.includes('Accept the variance over the purchase order') && body.includes('raw-material surcharge') &&
    body.includes('run-0102') && body.includes('APPROVAL_MISSING') && body.includes('hold_and_recheck'),
  'the proposal in words, its justification, and the run with the five fields of its error');
  await audit(page, 'approval');
  if (shots) {
    await page.screenshot({ path: path.join(shots, 'approval-full.png'), fullPage: true });
  }

  // The person sends it back with a question.
  await page.fill('#reason', question);
  await Promise.all([page.waitForNavigation(), page.click('button[value=send_back]')]);
  check((await page.locator('.flash').innerText()).includes(`${approveID} sent back to the agent`), `${approveID} sent back with a question`);
  check((await page.locator('nav .count').count()) === 0, 'nothing waits for the approver any more');

  // The agent reads the question, and asks again with its answer.
  const asked = await fetch(`${base}/approvals/${approveID}`, { headers: { 'X-API-Key': agentKey } });
  const sentBack = await asked.json();
  check(asked.status === 409 && sentBack.code === 'APPROVAL_SENT_BACK' && sentBack.details.question === question,
    `get_approval of ${approveID}: APPROVAL_SENT_BACK with the question: ${JSON.stringify(sentBack)}`);
  const again = await fetch(`${base}/invoices/5105600102/approvals`, {
    method: 'POST', headers: { 'X-API-Key': agentKey, 'Content-Type': 'application/json', 'X-Run-Id': 'run-0102' },
    body: JSON.stringify({ proposed_action: 'accept_variance',
      justification: 'Unit price 135.00 is 8 % over the PO price 125.00; the surcharge is clause 4.2 of framework contract FC-2026-17.' }),
  });
  const answered = await again.json();
  check(again.status === 200 && answered.status === 'pending' && answered.approval_id !== approveID,
    `the agent's new request answers the question: ${JSON.stringify(answered)}`);
  const answeredID = answered.approval_id;

  // The approver decides the new request by keyboard only.
  await page.goto(`${base}/console/approvals`);
  await page.click(`a[href^="/console/approvals/${answeredID}"]`);
  body = await evidence(answeredID);
  check(body.includes('clause 4.2') && (await page.locator('#other-approvals').innerText()).includes('Sent back to the agent with the question'),
    `approval ${answeredID} shows the answer, and ${approveID} sent back among the invoice's other approvals`);
  const focused = () => page.evaluate(() => {
    const e = document.activeElement;
    return e ? `${e.tagName.toLowerCase()}#${e.id}${e.getAttribute('href') || ''}${e.value && e.tagName === 'BUTTON' ? '=' + e.value : ''}` : '';
  });
  let tabs = 0;
  while (!(await focused()).endsWith('#decision') && tabs < 100) {
    await page.keyboard.press('Tab');
    tabs++;
  }
  check((await focused()).endsWith('#decision'), `Tab reaches "Go to the decision" (${tabs} presses)`);
  await page.keyboard.press('Enter');
  await page.keyboard.press('Tab');
  check((await focused()) === 'textarea#reason', 'Enter on it, then Tab, is the reason');
  await page.keyboard.type('Surcharge confirmed: clause 4.2 of the framework contract.');
  await page.keyboard.press('Tab');
  check((await focused()) === 'button#=approve', 'Tab from the reason is Approve');
  await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
  check((await page.locator('.flash').innerText()).includes(`${answeredID} approved`), `${answeredID} approved by keyboard only`);
  await page.goto(`${base}/console/approvals/${answeredID}`);
  const words = await page.locator('#decision-words').innerText();
  check(words.startsWith('Approved by m.keller on') && words.includes('clause 4.2 of the framework contract'), `the decision in words: ${words}`);
  const auditLog = await page.locator('#invoice-audit').innerText();
  check(auditLog.includes('decide_approval') && auditLog.includes('clause 4.2 of the framework contract'),
    'the invoice\'s audit log has the decision and its reason');

  // The agent now posts 5105600102 with the approval; neither the sent-back
  // nor the superseded one posts.
  const post = await fetch(`${base}/invoices/5105600102/post`, {
    method: 'POST', headers: { 'X-API-Key': agentKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({ approval_id: answeredID }),
  });
  const posted = await post.json();
  check(post.status === 200 && posted.status === 'posted', `post_invoice succeeds after the approval: ${JSON.stringify(posted)}`);
  for (const [id, what] of [[supersededID, 'superseded'], [approveID, 'sent back']]) {
    const refused = await fetch(`${base}/invoices/5105600102/post`, {
      method: 'POST', headers: { 'X-API-Key': agentKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ approval_id: id }),
    });
    check(refused.status !== 200 || (await refused.json()).already_posted === true, `the ${what} approval posts nothing new`);
  }

  // The person resolves the handover; the note goes to the audit log.
  await page.goto(`${base}/console/handovers/${handover102}`);
  await page.fill('#note', `Approved ${answeredID} (surcharge in the framework contract); the agent posted the invoice.`);
  await Promise.all([page.waitForNavigation(), page.click('text=Resolve')]);
  check((await page.locator('#handover-status').innerText()) === 'resolved', 'the handover is resolved');
  body = await text(page);
  check(body.includes('resolve_handover') && body.includes('the agent posted the invoice'), 'the audit log shows the note');

  // The invoice's case, from the handover: posted, with its history.
  await page.click('main dd a[href="/console/cases/5105600102"]');
  check(page.url() === `${base}/console/cases/5105600102`, 'the handover links to the case of 5105600102');
  check((await page.locator('#case-state').innerText()) === 'posted', 'the case of 5105600102 is posted');
  body = await text(page);
  // The handover closed the agent's hold: the invoice was a person's from then on.
  check(['approval.superseded', 'hold.placed', 'handover.created', 'hold.closed', 'approval.decided', 'invoice.posted',
    'handover.resolved', 'run-0102'].every((s) => body.includes(s)), 'the case history tells what happened, with the run');
  await audit(page, 'case');

  await page.click('nav >> text=Holds');
  body = await text(page);
  check(body.includes('4500018822') && body.includes('5105600105'), 'the holds page shows the goods receipt awaited');
  await audit(page, 'holds');
  await page.goto(`${base}/console/holds?status=released`);
  check((await text(page)).includes('5105600102'), 'the hold of 5105600102 ended with the handover');
  await page.goto(`${base}/console/runs?run_id=run-0102`);
  body = await text(page);
  check(body.includes('request_approval') && body.includes('APPROVAL_MISSING'), 'the runs page shows run-0102 in order');
  await audit(page, 'runs');
  await page.click('nav >> text=Health');
  check((await text(page)).includes('sqlite'), 'the health page shows the store');
  await audit(page, 'health');

  await Promise.all([page.waitForNavigation(), page.click('text=Sign out')]);
  await page.goto(`${base}/console/approvals`);
  check(page.url().startsWith(`${base}/console/sign-in`), 'after sign-out the console asks to sign in again');

  await browser.close();
  console.log(`console.cjs: OK (axe-core on ${audited.join(', ')})`);
})().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
