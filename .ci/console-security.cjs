// The console's security and its audit page in headless Chromium, run by
// .ci/console.sh with ERPGATE_BIN (the gateway it built) and NODE_PATH
// (playwright-core and axe-core). It starts a gateway of its own, with an
// agent, an approver and an auditor, so that its wrong keys count against
// no other walk: 30 wrong keys at the sign-in get 429; a cookie copied
// before sign-out no longer opens the console; the auditor's audit page
// shows the decision with "approve" and the reason, and its CSV downloads.
// SCREENSHOTS=DIR saves a PNG of the audit page and of a refusal into DIR.
'use strict';
const { chromium } = require('playwright-core');
const { spawn } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');

const bin = process.env.ERPGATE_BIN;
if (!bin) throw new Error('console-security.cjs: ERPGATE_BIN is not set');
const shots = process.env.SCREENSHOTS || '';
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

function check(ok, what) {
  if (!ok) throw new Error(`console-security.cjs: ${what}`);
  console.log(`ok: ${what}`);
}

async function audit(page, name) {
  await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of result.violations) {
    console.log(`axe ${name}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.length})`);
  }
  check(bad.length === 0, `axe-core on ${name}: no serious or critical violations`);
  if (shots) {
    await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: false });
  }
}

const key = (name) => `${name}-${crypto.randomBytes(12).toString('hex')}`;
const sha256 = (s) => crypto.createHash('sha256').update(s).digest('hex');

// startGateway runs the gateway on free ports of 127.0.0.1, with the
// ERPGATE_* settings of the environment left out, and resolves to its
// base URL once it prints where it listens. The failed authentications
// are counted with the default limit (20) in a window of an hour, so that
// the count cannot move to a new window while the wrong keys are sent.
function startGateway(keys, dir) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ERPGATE_')));
  const apiKeys = [`agent:${sha256(keys.agent)}:read+write`, `m.keller:${sha256(keys.approver)}:approve+review`,
    `r.audit:${sha256(keys.auditor)}:audit`].join(',');
  const gw = spawn(bin, ['-addr', '127.0.0.1:0', '-sim-addr', '127.0.0.1:0', '-data-dir', path.join(dir, 'records'),
    '-log-format', 'text', '-rate-window', '1h', '-api-keys', apiKeys], { env, stdio: ['ignore', 'pipe', fs.openSync(path.join(dir, 'erpgate.log'), 'w')] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the gateway printed no start line in 30s: ${out}`)), 30000);
    gw.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/^erpgate listening on (https?:\/\/\S+) /m);
      if (m) {
        clearTimeout(timer);
        resolve({ gw, base: m[1] });
      }
    });
    gw.on('exit', (code) => reject(new Error(`the gateway exited (${code}): ${out}`)));
  });
}

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-security-'));
  const keys = { agent: key('agent'), approver: key('approver'), auditor: key('auditor') };
  const { gw, base } = await startGateway(keys, dir);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    // The agent asks for a decision on 5105600102's 8 % variance.
    const api = async (method, p, body, k) => {
      const resp = await fetch(`${base}${p}`, {
        method, headers: { 'X-API-Key': k, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: resp.status, body: await resp.json() };
    };
    let r = await api('POST', '/invoices/5105600102/approvals', { proposed_action: 'accept_variance',
      justification: 'Unit price 135.00 is 8 % over the PO price 125.00; supplier cites a raw-material surcharge.' }, keys.agent);
    check(r.status === 200 && r.body.status === 'pending', `the agent's approval is pending: ${JSON.stringify(r.body)}`);
    const approvalID = r.body.approval_id;

    // The console's pages forbid inline scripts; axe-core is injected as one.
    const newContext = () => browser.newContext({ bypassCSP: true, viewport: { width: 1100, height: 720 }, acceptDownloads: true });
    const approverContext = await newContext();
    const page = await approverContext.newPage();
    page.setDefaultTimeout(15000);

    // 30 wrong keys from this address: the first 20 are not accepted, the
    // rest are too many attempts.
    const statuses = [];
    let resp;
    for (let i = 1; i <= 30; i++) {
      await page.goto(`${base}/console/sign-in`);
      await page.fill('#key', `wrong-key-${i}`);
      [resp] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
      statuses.push(resp.status());
    }
    check(statuses.slice(0, 20).every((s) => s === 401) && statuses.slice(20).every((s) => s === 429),
      `20 wrong keys get 401, the next 10 get 429: ${statuses.join(' ')}`);
    const retryAfter = (await resp.allHeaders())['retry-after'];
    check(retryAfter && (await page.locator('#problem-code').innerText()) === 'RATE_LIMITED' &&
      (await page.locator('h1').innerText()).includes(`Too many attempts: try again in ${retryAfter} seconds`),
    `the 30th says RATE_LIMITED, try again in ${retryAfter} seconds (Retry-After)`);
    check((await page.locator('main').innerText()).includes('auth_failures'), 'the 429 names the auth_failures reason for support');
    await audit(page, 'rate-limited');

    // The approver's right key still signs in from that address.
    await page.goto(`${base}/console/sign-in`);
    await page.fill('#key', keys.approver);
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    check(page.url() === `${base}/console/handovers`, 'the right key signs in from the limited address');

    // A copy of the session cookie opens the console in another browser,
    // until the approver signs out.
    const copied = await approverContext.cookies();
    const thiefContext = await newContext();
    await thiefContext.addCookies(copied);
    const thief = await thiefContext.newPage();
    await thief.goto(`${base}/console/approvals`);
    check(thief.url() === `${base}/console/approvals`, 'a copy of the cookie opens the console before sign-out');
    await Promise.all([page.waitForNavigation(), page.click('text=Sign out')]);
    await thief.goto(`${base}/console/approvals`);
    check(thief.url().startsWith(`${base}/console/sign-in`), 'the copy taken before sign-out no longer opens the console');
    await thiefContext.close();

    // The approver decides through the API with their own key.
    const reason = 'Surcharge confirmed with the supplier.';
    r = await api('POST', `/approvals/${approvalID}/decision`, { decision: 'approve', reason }, keys.approver);
    check(r.status === 200 && r.body.status === 'approved', `the approver approves ${approvalID}: ${JSON.stringify(r.body)}`);

    // The auditor signs in and lands on the audit page.
    const auditorContext = await newContext();
    const auditor = await auditorContext.newPage();
    auditor.setDefaultTimeout(15000);
    await auditor.goto(`${base}/console`);
    await auditor.fill('#key', keys.auditor);
    await Promise.all([auditor.waitForNavigation(), auditor.click('button[type=submit]')]);
    check(auditor.url() === `${base}/console/audit`, 'the auditor signs in and lands on the audit page');
    await auditor.selectOption('#operation', 'decide_approval');
    await auditor.fill('#invoice_id', '5105600102');
    await Promise.all([auditor.waitForNavigation(), auditor.click('main button[type=submit]')]);
    const row = auditor.locator('tbody tr').first();
    const rowText = await row.innerText();
    check(rowText.includes('m.keller') && rowText.includes('approve') && rowText.includes(reason) &&
      (await row.locator('strong.decision').innerText()) === 'approve',
    `the audit page shows m.keller's decision "approve" with the reason: ${rowText}`);
    await audit(auditor, 'audit');

    const [download] = await Promise.all([auditor.waitForEvent('download'), auditor.click('text=Download these rows as CSV')]);
    const csvPath = path.join(dir, 'audit.csv');
    await download.saveAs(csvPath);
    const csv = fs.readFileSync(csvPath, 'utf8');
    check(/^erpgate-audit-[0-9TZ]+\.csv$/.test(download.suggestedFilename()) &&
      csv.startsWith('id,at,client,operation,invoice_id,approval_id,document,outcome,decision,note,request_id,args_digest') &&
      csv.includes(`,decide_approval,5105600102,${approvalID},`) && csv.includes(`approve: ${reason}`) && !csv.includes('request_approval'),
    `the CSV downloads with the filtered rows (${download.suggestedFilename()})`);

    // The auditor's key does not open the approvals.
    resp = await auditor.goto(`${base}/console/approvals`);
    check(resp.status() === 409 && (await auditor.locator('#problem-code').innerText()) === 'SCOPE_MISSING' &&
      (await auditor.locator('h1').innerText()).startsWith('Your key does not open this page'),
    "the approvals refuse the auditor's key in words, SCOPE_MISSING beside them");
    await audit(auditor, 'refused-scope');
  } finally {
    await browser.close();
    const exited = new Promise((resolve) => gw.once('exit', resolve));
    gw.kill();
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log('console-security.cjs: OK');
})().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
