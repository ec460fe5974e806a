// Every console page and /docs on a phone (390x844) and on a desktop
// (1280x800) in headless Chromium, run by .ci/console.sh after the
// person's walk (which sets the environment below): the page itself never
// scrolls sideways (document.scrollingElement.scrollWidth is at most the
// viewport's width; wide tables scroll inside their own box), and
// axe-core finds no serious or critical violation. On a failure it names
// the elements that stick out.
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');

const env = (name) => {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`console-narrow.cjs: ${name} is not set`);
  return v;
};
const base = env('BASE');
const personKey = env('PERSON_KEY');
const approvalID = env('APPROVE_ID');
const handoverID = env('HANDOVER_102');
const runID = env('RUN_ID');
const invoiceID = env('CASE_INVOICE');
const auditKey = env('AUDIT_KEY');
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

const viewports = [
  { name: 'phone', width: 390, height: 844 },
  { name: 'desktop', width: 1280, height: 800 },
];

function check(ok, what) {
  if (!ok) throw new Error(`console-narrow.cjs: ${what}`);
  console.log(`ok: ${what}`);
}

// wideOnes lists the elements whose right edge lies beyond the viewport,
// outermost first: what makes the page scroll sideways.
async function wideOnes(page) {
  return await page.evaluate(() => {
    const w = document.documentElement.clientWidth;
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
      const r = el.getBoundingClientRect();
      if (r.right > w + 0.5 && !out.some((o) => o.el.contains(el))) {
        out.push({ el, what: `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.className ? '.' + el.className : ''} right=${Math.round(r.right)}` });
      }
    }
    return out.slice(0, 8).map((o) => o.what);
  });
}

async function fits(page, vp, name) {
  const width = await page.evaluate(() => document.scrollingElement.scrollWidth);
  if (width > vp.width) {
    console.log(`${name} at ${vp.width}px sticks out: ${(await wideOnes(page)).join('; ')}`);
  }
  check(width <= vp.width, `${name} at ${vp.width}x${vp.height}: the page is ${width}px wide, no sideways scrolling`);
}

async function audit(page, vp, name) {
  await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
  for (const v of result.violations) {
    console.log(`axe ${name} ${vp.name}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join(', ')})`);
  }
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  check(bad.length === 0, `axe-core on ${name} at ${vp.width}px: no serious or critical violations`);
}

// signIn signs in with key on the sign-in page.
async function signIn(page, vp, key, who) {
  await page.goto(`${base}/console/sign-in`);
  await page.fill('#key', key);
  await Promise.all([page.waitForNavigation(), page.click('main button[type=submit]')]);
  check(page.url().startsWith(`${base}/console/`) && !page.url().includes('sign-in'), `${who} signs in at ${vp.width}px`);
}

// visit opens path, checks its status, and that it fits and passes axe.
async function visit(page, vp, name, path, status = 200) {
  const resp = await page.goto(`${base}${path}`);
  check(resp.status() === status, `${name} (${path}) answers ${status}`);
  await fits(page, vp, name);
  await audit(page, vp, name);
}

(async () => {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  let pages = 0;
  for (const vp of viewports) {
    // The console's pages forbid inline scripts; axe-core is injected as one.
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: vp.width, height: vp.height },
      isMobile: vp.name === 'phone', hasTouch: vp.name === 'phone' });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);

    await visit(page, vp, 'landing', '/');
    await visit(page, vp, 'docs', '/docs');
    await visit(page, vp, 'sign-in', '/console/sign-in');
    await visit(page, vp, 'error page signed out', '/console/no-such-page', 404);
    await signIn(page, vp, personKey, 'the approver');

    await visit(page, vp, 'handovers', '/console/handovers');
    await visit(page, vp, 'handover', `/console/handovers/${handoverID}`);
    await visit(page, vp, 'approvals', '/console/approvals?status=any');
    await visit(page, vp, 'approval', `/console/approvals/${approvalID}`);
    await visit(page, vp, 'holds', '/console/holds');
    await visit(page, vp, 'holds released', '/console/holds?status=released');
    await visit(page, vp, 'runs', `/console/runs?run_id=${runID}`);
    await visit(page, vp, 'case', `/console/cases/${invoiceID}`);
    await visit(page, vp, 'health', '/console/health');
    await visit(page, vp, 'error page', '/console/no-such-page', 404);
    await visit(page, vp, 'docs signed in', '/docs');
    await context.close();

    // The auditor's pages, in a browser of their own.
    const auditor = await browser.newContext({ bypassCSP: true, viewport: { width: vp.width, height: vp.height },
      isMobile: vp.name === 'phone', hasTouch: vp.name === 'phone' });
    const apage = await auditor.newPage();
    apage.setDefaultTimeout(15000);
    await signIn(apage, vp, auditKey, 'the auditor');
    await visit(apage, vp, 'audit', '/console/audit');
    await visit(apage, vp, 'audit of an invoice', `/console/audit?invoice_id=${invoiceID}`);
    await auditor.close();
    pages += 18;
  }
  await browser.close();
  console.log(`console-narrow.cjs: OK (${pages} pages at ${viewports.map((v) => `${v.width}x${v.height}`).join(' and ')})`);
})().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
