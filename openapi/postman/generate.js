#!/usr/bin/env node
// Generates erpgate.postman_collection.json: the requests converted from
// ../openapi.yaml (the source of both contracts, the agents' operations and
// the people's) by openapi-to-postmanv2, arranged as the README's walk
// through the golden set, each with tests on its outcome. The agents' steps
// send the collection's {{bearerToken}} (none for a gateway without
// -api-keys); each operation of people is sent with a person's key of its
// own ({{approverKey}} or {{auditorKey}}). Regenerate from the repository
// root after changing the contract or the walk:
//
//   npm install --no-save --prefix /tmp/o2p openapi-to-postmanv2@6.3.3
//   NODE_PATH=/tmp/o2p/node_modules node openapi/postman/generate.js
//
// Run it against a gateway on its simulated ERP (go run ./cmd/erpgate), with
// the keys of the demonstration people it prints at start, as many times as
// you like: every run makes its own approvals, run id and idempotency key,
// and where an earlier run moved the golden set (an invoice posted, a hold
// still held) the step reads the state first and expects what follows from
// it (.ci/newman.sh runs it twice against one gateway):
//
//   npx -y newman@6.2.2 run openapi/postman/erpgate.postman_collection.json --env-var baseUrl=http://localhost:8080 \
//     --env-var approverKey=$KELLER_KEY --env-var auditorKey=$AUDITOR_KEY
'use strict';

const fs = require('fs');
const path = require('path');
const converter = require('openapi-to-postmanv2');
// js-yaml is a dependency of the converter; use its copy.
const yaml = require(require.resolve('js-yaml', { paths: [path.dirname(require.resolve('openapi-to-postmanv2'))] }));

const specPath = path.join(__dirname, '..', 'openapi.yaml');
const outPath = path.join(__dirname, 'erpgate.postman_collection.json');

// Tests every response gets: the request id, and on an error the one shape.
const collectionTests = `pm.test('X-Request-Id is set', function () {
    pm.response.to.have.header('X-Request-Id');
});
if (pm.response.code >= 400) {
    pm.test('error: application/problem+json with the five fields in order', function () {
        pm.expect(pm.response.headers.get('Content-Type')).to.include('application/problem+json');
        const body = pm.response.json();
        pm.expect(Object.keys(body)).to.eql(['code', 'message', 'retryable', 'next_action', 'details']);
        pm.expect(body.message).to.be.a('string').that.is.not.empty;
        pm.expect(body.message.length).to.be.at.most(200);
        pm.expect(body.details).to.be.an('object');
    });
} else {
    pm.test('success: application/json', function () {
        pm.expect(pm.response.headers.get('Content-Type')).to.include('application/json');
    });
}`;

const matchedJustification = 'Three-way match MATCHED on all lines.';

// Sets recheck_at to a day from now, truncated to whole seconds, as an
// RFC 3339 date-time in UTC (YYYY-MM-DDTHH:MM:SSZ). A request body holds no
// date of its own: a fixed one would fall into the past.
const recheckAtScript = `const recheckAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 24 * 3600 * 1000);
pm.collectionVariables.set('recheck_at', recheckAt.toISOString().slice(0, 19) + 'Z');`;

// The walk. Each step calls one operation (op) with path values, query,
// headers and body, and expects either an error (the five fields) or a
// success (status 200 and fields). Strings in expectations may hold
// {{variables}} set by earlier steps (set: variable <- response field;
// after: script lines run once the step's tests are done).
const walk = [
  {
    folder: 'Reads and the three-way match',
    description: 'The invoices of the golden set, one per outcome, read and matched. Matching is a read: it can be repeated.',
    steps: [
      {
        name: 'get_invoice 5105600101: the clean invoice',
        op: 'get_invoice', path: { invoice_id: '5105600101' },
        ok: { invoice_id: '5105600101', supplier_id: '100042', currency: 'EUR', gross_amount: '1000.00' },
        // parked on a fresh start; posted once the walk has run before, which
        // post_invoice's already_posted then says.
        check: "pm.expect(['parked', 'posted']).to.include(body.status);\npm.expect(body.lines).to.have.lengthOf(1);",
        after: "pm.collectionVariables.set('posted_before', String(body.status === 'posted'));",
      },
      {
        name: 'run_three_way_match 5105600101: MATCHED',
        op: 'run_three_way_match', path: { invoice_id: '5105600101' }, body: {},
        ok: { invoice_id: '5105600101', result: 'MATCHED', next_action: 'request_approval', exceeding: [] },
        check: 'pm.expect(body.lines[0].within_tolerance).to.eql(true);',
      },
      {
        name: 'run_three_way_match 5105600102: TOLERANCE_EXCEEDED (a result, not an error)',
        op: 'run_three_way_match', path: { invoice_id: '5105600102' }, body: {},
        ok: { invoice_id: '5105600102', result: 'TOLERANCE_EXCEEDED', next_action: 'request_approval' },
        check: "pm.expect(body.exceeding).to.eql([{ invoice_item: '1', kind: 'price', variance_amount: '1000.00', variance_percent: '8.00' }]);\npm.expect(body.lines[0].within_tolerance).to.eql(false);",
      },
      {
        name: 'get_invoice 5105600999: INVOICE_NOT_FOUND',
        op: 'get_invoice', path: { invoice_id: '5105600999' },
        error: [404, 'INVOICE_NOT_FOUND', 'fix_input_and_retry', false, { invoice_id: '5105600999', queue: 'ap_queue' }],
      },
      {
        name: 'run_three_way_match 5105600103: PO_NOT_FOUND',
        op: 'run_three_way_match', path: { invoice_id: '5105600103' }, body: {},
        error: [404, 'PO_NOT_FOUND', 'fix_input_and_retry', false, { invoice_id: '5105600103', po_id: '4500019822', queue: 'ap_queue' }],
      },
      {
        name: 'run_three_way_match 5105600104: SUPPLIER_NOT_FOUND',
        op: 'run_three_way_match', path: { invoice_id: '5105600104' }, body: {},
        error: [404, 'SUPPLIER_NOT_FOUND', 'fix_input_and_retry', false,
          { invoice_id: '5105600104', supplier_id: '100999', reason: 'not_in_master', queue: 'master_data' }],
      },
      {
        name: 'run_three_way_match 5105600105: GR_MISSING',
        op: 'run_three_way_match', path: { invoice_id: '5105600105' }, body: {},
        error: [409, 'GR_MISSING', 'hold_and_recheck', false, { invoice_id: '5105600105', po_id: '4500018822', item: '20' }],
      },
      {
        name: 'get_goods_receipt 4500018822 item 20: GR_MISSING',
        op: 'get_goods_receipt', path: { po_id: '4500018822', item: '20' },
        error: [409, 'GR_MISSING', 'hold_and_recheck', false, { po_id: '4500018822', item: '20' }],
      },
      {
        name: 'get_goods_receipt 4500018822 item 10: received',
        op: 'get_goods_receipt', path: { po_id: '4500018822', item: '10' },
        ok: { po_id: '4500018822', item: '10', goods_receipt_based: true, received_quantity: '10' },
      },
      {
        name: 'run_three_way_match 5105600106: PO_CLOSED',
        op: 'run_three_way_match', path: { invoice_id: '5105600106' }, body: {},
        error: [409, 'PO_CLOSED', 'route_to_person', false,
          { invoice_id: '5105600106', po_id: '4500018830', item: '10', reason: 'delivered_and_finally_invoiced', queue: 'procurement' }],
      },
      {
        name: 'get_purchase_order 4500018830: the closed item',
        op: 'get_purchase_order', path: { po_id: '4500018830' },
        ok: { po_id: '4500018830', supplier_id: '100043' },
        check: "pm.expect(body.items[0]).to.deep.include({ item: '10', closed: true, closed_reason: 'delivered_and_finally_invoiced' });",
      },
      {
        name: 'get_purchase_order 4500019822: PO_NOT_FOUND',
        op: 'get_purchase_order', path: { po_id: '4500019822' },
        error: [404, 'PO_NOT_FOUND', 'fix_input_and_retry', false, { po_id: '4500019822', queue: 'ap_queue' }],
      },
      {
        name: 'run_three_way_match 5105600107: DUPLICATE_INVOICE',
        op: 'run_three_way_match', path: { invoice_id: '5105600107' }, body: {},
        error: [409, 'DUPLICATE_INVOICE', 'route_to_person', false,
          { invoice_id: '5105600107', duplicate_of: '5105600100', supplier_id: '100043', supplier_ref: 'INV-88120', queue: 'ap_team' }],
      },
      {
        name: 'get_invoice 12345: INVALID_REQUEST (an id of the wrong form)',
        op: 'get_invoice', path: { invoice_id: '12345' },
        error: [400, 'INVALID_REQUEST', 'fix_input_and_retry', false, { field: 'invoice_id' }],
      },
    ],
  },
  {
    folder: 'Approvals and posting',
    description:
      'Approval routing and posting. The approval ids come from the responses, kept in collection variables. ' +
      'A person decides the pending approval through the gateway (list_approvals, decide_approval), and the ' +
      'audit log (get_audit) shows the writes. The walk ends with a second proposal for 5105600102 approved, ' +
      'which supersedes the first: the next run\'s proposal is then a new approval for a person to decide.',
    steps: [
      {
        name: 'request_approval 5105600108: APPROVER_NOT_FOUND',
        op: 'request_approval', path: { invoice_id: '5105600108' },
        body: { proposed_action: 'post_as_invoiced', justification: 'Racking system delivered and receipted; match is clean.' },
        error: [422, 'APPROVER_NOT_FOUND', 'route_to_person', false, { invoice_id: '5105600108', queue: 'ap_lead' }],
      },
      {
        name: 'post_invoice 5105600101 without approval_id: APPROVAL_MISSING',
        op: 'post_invoice', path: { invoice_id: '5105600101' }, body: {},
        error: [409, 'APPROVAL_MISSING', 'request_approval', false, { invoice_id: '5105600101', reason: 'absent' }],
      },
      {
        name: 'request_approval 5105600101: approved at once',
        op: 'request_approval', path: { invoice_id: '5105600101' },
        body: { proposed_action: 'post_as_invoiced', justification: matchedJustification },
        ok: { invoice_id: '5105600101', status: 'approved', approver: 'auto', proposed_action: 'post_as_invoiced', amount: '1000.00' },
        set: { approval_id: 'approval_id' },
      },
      {
        name: 'get_approval {{approval_id}}: approved',
        op: 'get_approval', path: { approval_id: '{{approval_id}}' },
        ok: { approval_id: '{{approval_id}}', invoice_id: '5105600101', status: 'approved' },
      },
      {
        name: 'post_invoice 5105600101 with {{approval_id}}: posted',
        op: 'post_invoice', path: { invoice_id: '5105600101' }, body: { approval_id: '{{approval_id}}' },
        ok: { invoice_id: '5105600101', status: 'posted', approval_id: '{{approval_id}}' },
        // false on a fresh start; true once the walk has run before.
        check: "pm.expect(body.already_posted).to.eql(pm.collectionVariables.get('posted_before') === 'true');",
      },
      {
        name: 'get_case 5105600101: posted, nothing left to do',
        op: 'get_case', path: { invoice_id: '5105600101' },
        ok: { invoice_id: '5105600101', state: 'posted', posted: true },
        check: [
          "pm.expect(body.next.operation).to.eql('none');",
          "const kinds = body.events.map(function (e) { return e.kind; });",
          "pm.expect(kinds).to.include.members(['approval.requested', 'invoice.posted']);",
          "pm.expect(body.version).to.eql(body.events[body.events.length - 1].version);",
        ].join('\n'),
      },
      {
        name: 'get_audit 5105600101 as the auditor: request_approval and post_invoice, OK',
        op: 'get_audit', as: 'auditor', query: { invoice_id: '5105600101' },
        ok: {},
        check: [
          "pm.expect(body.entries.every(function (e) { return e.invoice_id === '5105600101'; })).to.eql(true);",
          "const done = body.entries.filter(function (e) { return e.outcome === 'OK'; });",
          "pm.expect(done.map(function (e) { return e.operation; })).to.include.members(['request_approval', 'post_invoice']);",
          "const posted = done.find(function (e) { return e.operation === 'post_invoice'; });",
          "pm.expect(posted.approval_id).to.eql(pm.collectionVariables.get('approval_id'));",
          "// The post refused before the approval is in the log too.",
          "pm.expect(body.entries.some(function (e) { return e.operation === 'post_invoice' && e.outcome === 'APPROVAL_MISSING'; })).to.eql(true);",
        ].join('\n'),
      },
      {
        name: 'request_approval 5105600109: approved at once',
        op: 'request_approval', path: { invoice_id: '5105600109' },
        body: { proposed_action: 'post_as_invoiced', justification: matchedJustification },
        ok: { invoice_id: '5105600109', status: 'approved', approver: 'auto', amount: '600.00' },
        set: { period_approval_id: 'approval_id' },
      },
      {
        name: 'post_invoice 5105600109 with {{period_approval_id}}: PERIOD_CLOSED',
        op: 'post_invoice', path: { invoice_id: '5105600109' }, body: { approval_id: '{{period_approval_id}}' },
        error: [409, 'PERIOD_CLOSED', 'stop_and_escalate', false, { invoice_id: '5105600109', queue: 'finance' }],
      },
      {
        name: 'request_approval 5105600102: pending for ap_manager',
        op: 'request_approval', path: { invoice_id: '5105600102' },
        body: {
          proposed_action: 'accept_variance',
          justification: 'Unit price 135.00 is 8 % over the PO price 125.00; supplier cites a raw-material surcharge.',
        },
        // A new approval on every run: the walk ends with this one superseded
        // (see the last request_approval of 5105600102), so that the same
        // proposal asked again is no longer answered by it.
        ok: {
          invoice_id: '5105600102', status: 'pending', approver: 'ap_manager',
          proposed_action: 'accept_variance', amount: '13500.00',
        },
        check: [
          "pm.expect(body.approval_id).to.match(/^A[0-9]{7,}$/);",
          "pm.expect(body).to.not.have.property('decided_at');",
          "pm.expect(body).to.not.have.property('decided_by');",
          "pm.expect(body.requested_by).to.be.a('string').that.is.not.empty;",
        ].join('\n'),
        set: { pending_approval_id: 'approval_id' },
      },
      {
        name: 'post_invoice 5105600102 with {{pending_approval_id}}: APPROVAL_MISSING (pending)',
        op: 'post_invoice', path: { invoice_id: '5105600102' }, body: { approval_id: '{{pending_approval_id}}' },
        error: [409, 'APPROVAL_MISSING', 'hold_and_recheck', false,
          { invoice_id: '5105600102', approval_id: '{{pending_approval_id}}', reason: 'pending' }],
      },
      {
        name: 'list_approvals pending, as the approver: {{pending_approval_id}} is listed',
        op: 'list_approvals', as: 'approver', query: { status: 'pending' },
        ok: {},
        check: [
          "pm.expect(body.approvals.every(function (a) { return a.status === 'pending'; })).to.eql(true);",
          "const listed = body.approvals.find(function (a) { return a.approval_id === pm.collectionVariables.get('pending_approval_id'); });",
          "pm.expect(listed).to.deep.include({ invoice_id: '5105600102', status: 'pending', approver: 'ap_manager', proposed_action: 'accept_variance', amount: '13500.00' });",
        ].join('\n'),
      },
      {
        name: 'decide_approval {{pending_approval_id}} with the agent\'s credentials: SCOPE_MISSING',
        op: 'decide_approval', as: 'agent', path: { approval_id: '{{pending_approval_id}}' },
        body: { decision: 'approve', reason: 'Surcharge confirmed with the supplier.' },
        error: [409, 'SCOPE_MISSING', 'route_to_person', false,
          { approval_id: '{{pending_approval_id}}', operation: 'decide_approval', scope: 'approve' }],
      },
      {
        name: 'decide_approval {{pending_approval_id}} as the approver m.keller: approved',
        op: 'decide_approval', as: 'approver', path: { approval_id: '{{pending_approval_id}}' },
        body: { decision: 'approve', reason: 'Surcharge confirmed with the supplier.' },
        ok: {
          approval_id: '{{pending_approval_id}}', invoice_id: '5105600102', status: 'approved', approver: 'ap_manager',
          decided_by: 'm.keller', decision_reason: 'Surcharge confirmed with the supplier.',
        },
        check: "pm.expect(body.decided_at).to.be.a('string').that.is.not.empty;\npm.expect(body.requested_by).to.not.eql('m.keller');",
      },
      {
        name: 'get_approval {{pending_approval_id}}: approved by m.keller',
        op: 'get_approval', path: { approval_id: '{{pending_approval_id}}' },
        ok: { approval_id: '{{pending_approval_id}}', invoice_id: '5105600102', status: 'approved', decided_by: 'm.keller' },
      },
      {
        name: 'post_invoice 5105600102 with {{pending_approval_id}}: posted with TOLERANCE_EXCEEDED',
        op: 'post_invoice', path: { invoice_id: '5105600102' }, body: { approval_id: '{{pending_approval_id}}' },
        ok: {
          invoice_id: '5105600102', status: 'posted', approval_id: '{{pending_approval_id}}',
          payment_block: 'R', info_code: 'TOLERANCE_EXCEEDED',
        },
      },
      {
        name: 'decide_approval {{pending_approval_id}} a second time: APPROVAL_DECIDED',
        op: 'decide_approval', as: 'approver', path: { approval_id: '{{pending_approval_id}}' },
        body: { decision: 'reject', reason: 'Second thoughts after the posting.' },
        error: [409, 'APPROVAL_DECIDED', 'stop_and_escalate', false,
          { approval_id: '{{pending_approval_id}}', reason: 'not_pending', status: 'approved' }],
      },
      {
        name: 'request_approval 5105600102 correct_amount 12500.00: a second proposal, pending for ap_manager',
        op: 'request_approval', path: { invoice_id: '5105600102' },
        body: {
          proposed_action: 'correct_amount', corrected_amount: '12500.00',
          justification: 'Supplier withdrew the surcharge: credit note for 1000.00 to bring the invoice to the PO price 125.00.',
        },
        // New on every run too: the approval of the accept_variance proposal,
        // approved above, superseded this proposal's approval of the run before.
        ok: {
          invoice_id: '5105600102', status: 'pending', approver: 'ap_manager',
          proposed_action: 'correct_amount', amount: '12500.00',
        },
        check: "pm.expect(body.approval_id).to.match(/^A[0-9]{7,}$/);\npm.expect(body.approval_id).to.not.eql(pm.collectionVariables.get('pending_approval_id'));\npm.expect(body).to.not.have.property('decided_at');",
        set: { correction_approval_id: 'approval_id' },
      },
      {
        name: 'decide_approval {{correction_approval_id}} as the approver m.keller: approved',
        op: 'decide_approval', as: 'approver', path: { approval_id: '{{correction_approval_id}}' },
        body: { decision: 'approve', reason: 'Credit note confirmed with the supplier.' },
        ok: {
          approval_id: '{{correction_approval_id}}', invoice_id: '5105600102', status: 'approved',
          proposed_action: 'correct_amount', decided_by: 'm.keller',
        },
      },
      {
        name: 'get_approval {{pending_approval_id}}: superseded by {{correction_approval_id}}',
        op: 'get_approval', path: { approval_id: '{{pending_approval_id}}' },
        // An approval approved supersedes the invoice's other approvals: the
        // next run's accept_variance proposal is a new approval.
        ok: {
          approval_id: '{{pending_approval_id}}', invoice_id: '5105600102', status: 'superseded',
          superseded_by: '{{correction_approval_id}}',
        },
      },
      {
        name: 'get_approval A0000000: APPROVAL_MISSING (unknown: no approval has the number 0)',
        op: 'get_approval', path: { approval_id: 'A0000000' },
        error: [409, 'APPROVAL_MISSING', 'request_approval', false, { approval_id: 'A0000000', reason: 'unknown' }],
      },
    ],
  },
  {
    folder: 'Suppliers, hold, hand over',
    description:
      'Supplier lookups (no match is a success), hold (the hold and the invoice\'s case read back: get_hold, ' +
      'get_case) and hand over, the handover in its queue as the AP team lists it (list_handovers), and a value ' +
      'that reads like an error.',
    steps: [
      {
        name: 'search_suppliers acme: found',
        op: 'search_suppliers', query: { name: 'acme' },
        ok: { found: true, query: 'acme' },
        check: "pm.expect(body.suppliers.map(function (s) { return s.supplier_id; })).to.eql(['100042', '100044']);",
      },
      {
        name: 'search_suppliers zeppelin: found false (a success)',
        op: 'search_suppliers', query: { name: 'zeppelin' },
        ok: { found: false, query: 'zeppelin', suppliers: [] },
      },
      {
        name: 'get_supplier 100042',
        op: 'get_supplier', path: { supplier_id: '100042' },
        ok: { supplier_id: '100042', name: 'Acme Industrial Supplies GmbH', posting_blocked: false, deleted: false },
      },
      {
        name: 'get_supplier 100999: SUPPLIER_NOT_FOUND',
        op: 'get_supplier', path: { supplier_id: '100999' },
        error: [404, 'SUPPLIER_NOT_FOUND', 'fix_input_and_retry', false, { supplier_id: '100999', reason: 'not_in_master', queue: 'master_data' }],
      },
      {
        name: 'get_case 5105600105: open, or on hold since an earlier walk',
        op: 'get_case', path: { invoice_id: '5105600105' },
        ok: { invoice_id: '5105600105', posted: false },
        // The invoice's goods receipt never arrives in the simulated ERP, so
        // the hold an earlier walk placed is still held: hold_invoice then
        // answers it (an invoice has one open hold).
        check: [
          "pm.expect(['open', 'on_hold']).to.include(body.state);",
          "if (body.state === 'on_hold') {",
          "    pm.expect(body.hold_id).to.match(/^H[0-9]{7,}$/);",
          "    pm.expect(body.next).to.deep.include({ operation: 'get_hold', path: '/holds/' + body.hold_id });",
          "} else {",
          "    pm.expect(body).to.not.have.property('hold_id');",
          "}",
        ].join('\n'),
        after: "pm.collectionVariables.set('open_hold_id', body.state === 'on_hold' ? body.hold_id : '');",
      },
      {
        name: 'hold_invoice 5105600105: held, re-checked a day from now',
        // recheck_at must lie in the future; the step sets it before it runs.
        prerequest: recheckAtScript,
        op: 'hold_invoice', path: { invoice_id: '5105600105' },
        body: { reason: 'No goods receipt yet for PO 4500018822 item 20', recheck_at: '{{recheck_at}}' },
        ok: { invoice_id: '5105600105', status: 'held', reason: 'No goods receipt yet for PO 4500018822 item 20' },
        check: [
          "pm.expect(body.waits_for).to.eql({ goods_receipts: [{ po_id: '4500018822', item: '20' }] });",
          "const openHold = pm.collectionVariables.get('open_hold_id');",
          "if (openHold) {",
          "    // The open hold an earlier walk placed, as it stands: its own re-check time.",
          "    pm.expect(body.hold_id).to.eql(openHold);",
          "    pm.expect(Date.parse(body.recheck_at)).to.be.at.most(Date.parse(pm.collectionVariables.get('recheck_at')));",
          "} else {",
          "    pm.expect(body.hold_id).to.match(/^H[0-9]{7,}$/);",
          "    pm.expect(body.recheck_at).to.eql(pm.collectionVariables.get('recheck_at'));",
          "    pm.expect(body.checks).to.eql(0);",
          "}",
        ].join('\n'),
        set: { hold_id: 'hold_id' },
      },
      {
        name: 'get_hold {{hold_id}}: held, waiting for the goods receipt of PO 4500018822 item 20',
        op: 'get_hold', path: { hold_id: '{{hold_id}}' },
        ok: {
          hold_id: '{{hold_id}}', invoice_id: '5105600105', status: 'held',
          waits_for: { goods_receipts: [{ po_id: '4500018822', item: '20' }] },
        },
        check: "pm.expect(body.events[0].kind).to.eql('placed');\npm.expect(body).to.not.have.property('released_at');",
      },
      {
        name: 'get_case 5105600105: on hold, next get_hold {{hold_id}}',
        op: 'get_case', path: { invoice_id: '5105600105' },
        ok: { invoice_id: '5105600105', state: 'on_hold', hold_id: '{{hold_id}}', posted: false },
        check: [
          "pm.expect(body.next).to.deep.include({ operation: 'get_hold', method: 'GET', path: '/holds/' + pm.collectionVariables.get('hold_id') });",
          "pm.expect(body.events.map(function (e) { return e.kind; })).to.include('hold.placed');",
        ].join('\n'),
      },
      {
        name: 'hand_over 5105600106 PO_CLOSED: queued for procurement',
        op: 'hand_over',
        body: {
          invoice_id: '5105600106', code: 'PO_CLOSED',
          summary: 'PO 4500018830 item 10 is delivered and finally invoiced; invoice NW-55102 bills it again.',
          evidence: ['run_three_way_match: PO_CLOSED, reason delivered_and_finally_invoiced'],
        },
        ok: { invoice_id: '5105600106', queue: 'procurement', status: 'queued' },
        set: { procurement_handover_id: 'handover_id' },
      },
      {
        name: 'list_handovers procurement, as the AP team: the PO_CLOSED handover is listed',
        op: 'list_handovers', as: 'approver', query: { queue: 'procurement' },
        ok: {},
        check: [
          "pm.expect(body.handovers.every(function (h) { return h.queue === 'procurement'; })).to.eql(true);",
          "const listed = body.handovers.find(function (h) { return h.handover_id === pm.collectionVariables.get('procurement_handover_id'); });",
          "pm.expect(listed).to.deep.include({ invoice_id: '5105600106', queue: 'procurement', code: 'PO_CLOSED', status: 'queued' });",
          "pm.expect(listed.evidence).to.eql(['run_three_way_match: PO_CLOSED, reason delivered_and_finally_invoiced']);",
        ].join('\n'),
      },
      {
        name: 'hold_invoice 5105600105 with an error text as reason: INVALID_REQUEST',
        op: 'hold_invoice', path: { invoice_id: '5105600105' },
        body: { reason: 'Rate limit exceeded, retry after 30s' },
        error: [400, 'INVALID_REQUEST', 'fix_input_and_retry', false, { field: 'reason' }],
      },
    ],
  },
  {
    folder: 'Runs and idempotency',
    description:
      'Loop detection within one run (X-Run-Id) and idempotent replay (Idempotency-Key). The run id and the key are new ' +
      'on every collection run. The loop is shown on a purchase order read, a call about no invoice: every run of an ' +
      'agent on an invoice counts towards the invoice\'s cap on runs (-invoice-runs, 10 by default), which running ' +
      'the collection again would spend.',
    steps: [
      {
        name: 'get_purchase_order 4500019822 in run walk-{{walk_id}}: PO_NOT_FOUND',
        // A new run id and idempotency key for every run of the collection.
        prerequest: "pm.collectionVariables.set('walk_id', Date.now().toString(36) + Math.random().toString(36).slice(2, 8));",
        op: 'get_purchase_order', path: { po_id: '4500019822' }, headers: { 'X-Run-Id': 'walk-{{walk_id}}' },
        error: [404, 'PO_NOT_FOUND', 'fix_input_and_retry', false, { po_id: '4500019822', queue: 'ap_queue' }],
      },
      {
        name: 'get_purchase_order 4500019822 again in the same run: LOOP_DETECTED',
        op: 'get_purchase_order', path: { po_id: '4500019822' }, headers: { 'X-Run-Id': 'walk-{{walk_id}}' },
        error: [409, 'LOOP_DETECTED', 'route_to_person', false,
          { po_id: '4500019822', operation: 'get_purchase_order', limit: 'identical_repeat', previous_code: 'PO_NOT_FOUND', run_id: 'walk-{{walk_id}}' }],
      },
      {
        name: 'hand_over 5105600103 in the same run: queued',
        op: 'hand_over', headers: { 'X-Run-Id': 'walk-{{walk_id}}' },
        body: {
          invoice_id: '5105600103', code: 'PO_NOT_FOUND',
          summary: 'Invoice references PO 4500019822, which does not exist; 4500018822 is the likely intended PO.',
        },
        ok: { invoice_id: '5105600103', queue: 'ap_queue', status: 'queued' },
      },
      {
        name: 'get_run walk-{{walk_id}}: three calls, one refused',
        op: 'get_run', path: { run_id: 'walk-{{walk_id}}' },
        ok: { run_id: 'walk-{{walk_id}}' },
        check: "pm.expect(body.calls.map(function (c) { return [c.operation, c.code, c.refused]; })).to.eql([\n    ['get_purchase_order', 'PO_NOT_FOUND', false],\n    ['get_purchase_order', 'LOOP_DETECTED', true],\n    ['hand_over', 'OK', false]\n]);\npm.expect(body.errors.map(function (e) { return e.code; })).to.eql(['PO_NOT_FOUND', 'LOOP_DETECTED']);",
      },
      {
        name: 'hand_over 5105600104 with Idempotency-Key ho-{{walk_id}}: queued',
        op: 'hand_over', headers: { 'Idempotency-Key': 'ho-{{walk_id}}' },
        body: { invoice_id: '5105600104', code: 'SUPPLIER_NOT_FOUND', summary: 'Invoicing party 100999 is not in the supplier master.' },
        ok: { invoice_id: '5105600104', queue: 'master_data', status: 'queued' },
        check: "pm.expect(pm.response.headers.has('Idempotent-Replayed')).to.eql(false);",
        set: { handover_id: 'handover_id' },
      },
      {
        name: 'hand_over again with the same key and arguments: replayed',
        op: 'hand_over', headers: { 'Idempotency-Key': 'ho-{{walk_id}}' },
        body: { invoice_id: '5105600104', code: 'SUPPLIER_NOT_FOUND', summary: 'Invoicing party 100999 is not in the supplier master.' },
        ok: { handover_id: '{{handover_id}}', invoice_id: '5105600104', queue: 'master_data' },
        check: "pm.expect(pm.response.headers.get('Idempotent-Replayed')).to.eql('true');",
      },
      {
        name: 'hand_over with the same key and other arguments: IDEMPOTENCY_KEY_REUSED',
        op: 'hand_over', headers: { 'Idempotency-Key': 'ho-{{walk_id}}' },
        body: { invoice_id: '5105600104', code: 'SUPPLIER_NOT_FOUND', summary: 'Supplier 100999 unknown; please create it.' },
        error: [409, 'IDEMPOTENCY_KEY_REUSED', 'fix_input_and_retry', false, {}],
      },
    ],
  },
];

// people are the keys the operations of people are sent with, by the as of
// a step: the collection variable of each person's key. as 'agent' sends an
// operation of people with the agent's credentials, to show its refusal.
const people = {
  approver: 'approverKey',
  auditor: 'auditorKey',
};

// personAuth is the request's own authentication for a step that calls an
// operation of people: the person's key as a bearer token, or, for as
// 'agent', none of its own (the collection's, the agent's).
function personAuth(step, forPeople) {
  if (!forPeople) {
    if (step.as) throw new Error(`${step.name}: ${step.op} is an agent's operation; it takes no person`);
    return undefined;
  }
  if (step.as === 'agent') return undefined;
  const variable = people[step.as];
  if (!variable) throw new Error(`${step.name}: ${step.op} is an operation of people: say as whom (${Object.keys(people).join(', ')} or agent)`);
  return { type: 'bearer', bearer: [{ key: 'token', value: `{{${variable}}}`, type: 'string' }] };
}

function script(type, source) {
  return { listen: type, script: { type: 'text/javascript', exec: source.split('\n') } };
}

// stepTests returns the test script of a step.
function stepTests(step) {
  const lines = [
    '// want resolves the {{variables}} in an expected value.',
    'function want(value) { return JSON.parse(pm.variables.replaceIn(JSON.stringify(value))); }',
  ];
  const want = (v) => `want(${JSON.stringify(v)})`;
  if (step.error) {
    const [status, code, nextAction, retryable, details] = step.error;
    lines.push(
      `pm.test('${status} ${code}', function () {`,
      `    pm.response.to.have.status(${status});`,
      '});',
      'const body = pm.response.json();',
      `pm.test('code ${code}, next_action ${nextAction}, retryable ${retryable}', function () {`,
      `    pm.expect(body.code).to.eql('${code}');`,
      `    pm.expect(body.next_action).to.eql('${nextAction}');`,
      `    pm.expect(body.retryable).to.eql(${retryable});`,
      '});',
      `pm.test('details ${Object.keys(details).join(', ') || '(none required)'}', function () {`,
      `    pm.expect(body.details).to.deep.include(${want(details)});`,
      '});',
    );
  } else {
    lines.push(
      "pm.test('200', function () {",
      '    pm.response.to.have.status(200);',
      '});',
      'const body = pm.response.json();',
    );
    // A list has no fields of its own to compare; its check looks at the items.
    if (!Object.keys(step.ok).length && !step.check) throw new Error(`${step.name}: nothing to expect of the answer`);
    if (Object.keys(step.ok).length) {
      lines.push(
        `pm.test('${Object.keys(step.ok).join(', ')}', function () {`,
        `    pm.expect(body).to.deep.include(${want(step.ok)});`,
        '});',
      );
    }
    if (step.check) {
      lines.push("pm.test('the rest of the answer', function () {", ...step.check.split('\n').map((l) => '    ' + l), '});');
    }
    for (const [variable, field] of Object.entries(step.set || {})) {
      lines.push(`pm.collectionVariables.set('${variable}', body.${field});`);
    }
  }
  if (step.after) lines.push(...step.after.split('\n'));
  return lines.join('\n');
}

// request builds the request of a step from the converted request of its
// operation: path values, query, the optional headers the step sends (the
// rest stay disabled) and the body.
function request(template, step) {
  const req = JSON.parse(JSON.stringify(template.request));
  delete req.name;
  req.url.variable = (req.url.variable || []).map((v) => {
    if (!(v.key in (step.path || {}))) throw new Error(`${step.name}: no value for path parameter ${v.key}`);
    return { ...v, value: step.path[v.key] };
  });
  const query = step.query || {};
  req.url.query = (req.url.query || []).map((q) => (q.key in query ? { ...q, value: query[q.key], disabled: false } : { ...q, disabled: true }));
  const headers = step.headers || {};
  for (const name of Object.keys(headers)) {
    if (!req.header.some((h) => h.key === name)) throw new Error(`${step.name}: ${step.op} has no header ${name}`);
  }
  req.header = req.header.map((h) => (h.key in headers ? { ...h, value: headers[h.key], disabled: false } : h));
  const takesBody = Boolean(req.body && req.body.mode);
  if (takesBody !== (step.body !== undefined)) {
    throw new Error(`${step.name}: ${step.op} ${takesBody ? 'takes' : 'takes no'} body`);
  }
  if (takesBody) {
    req.body.raw = JSON.stringify(step.body, null, 2);
  } else {
    delete req.body;
  }
  return req;
}

function operationIds(spec) {
  const ids = {};
  for (const [p, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      ids[`${method.toUpperCase()} ${p.replace(/\{([^}]+)\}/g, ':$1').replace(/^\//, '')}`] = op.operationId;
    }
  }
  return ids;
}

// peopleOperations are the operationIds marked x-erpgate-audience: people.
function peopleOperations(spec) {
  const ids = new Set();
  for (const item of Object.values(spec.paths)) {
    for (const op of Object.values(item)) {
      if (op['x-erpgate-audience'] === 'people') ids.add(op.operationId);
    }
  }
  return ids;
}

function main() {
  const source = fs.readFileSync(specPath, 'utf8');
  const spec = yaml.load(source);
  const ids = operationIds(spec);
  const forPeople = peopleOperations(spec);
  const options = {
    folderStrategy: 'Tags',
    parametersResolution: 'Example',
    enableOptionalParameters: false,
    alwaysInheritAuthentication: true,
  };
  converter.convertV2({ type: 'string', data: source }, options, (err, res) => {
    if (err) throw err;
    if (!res.result) throw new Error(`openapi-to-postmanv2: ${res.reason}`);
    const generated = res.output[0].data;
    const templates = {};
    for (const folder of generated.item) {
      for (const item of folder.item) {
        const id = ids[`${item.request.method} ${item.request.url.path.join('/')}`];
        if (!id) throw new Error(`no operation for ${item.request.method} ${item.request.url.path.join('/')}`);
        templates[id] = item;
      }
    }
    const used = new Set();
    const collection = {
      info: {
        name: 'erpgate golden walk',
        description:
          'A walk through the golden set of the simulated ERP, one request per outcome, in the order of the README. ' +
          'Run it against a gateway on its simulated ERP (go run ./cmd/erpgate) with baseUrl set to its address, and ' +
          'approverKey and auditorKey to the keys of m.keller and a.auditor it prints at start, as many times as you ' +
          'like: each run makes its own approvals, run id and idempotency key, and where an earlier run moved the ' +
          'golden set (an invoice posted, a hold still held) the tests expect what follows from it. ' +
          'Generated from openapi/openapi.yaml by openapi/postman/generate.js; do not edit by hand.\n\n' +
          generated.info.description.content,
        schema: generated.info.schema,
      },
      auth: generated.auth,
      event: [script('test', collectionTests)],
      variable: [
        { key: 'baseUrl', value: 'http://localhost:8080' },
        { key: 'bearerToken', value: '', description: "The agent's API key, when the gateway is started with credentials." },
        {
          key: 'approverKey', value: '',
          description: 'The key of the person who decides and works the queues (scopes approve and review): m.keller, ' +
            'whose key a gateway started without -api-keys prints at start (KELLER_KEY).',
        },
        {
          key: 'auditorKey', value: '',
          description: 'The key of the auditor (scope audit): a.auditor, whose key a gateway started without ' +
            '-api-keys prints at start (AUDITOR_KEY).',
        },
      ],
      item: walk.map((folder) => ({
        name: folder.folder,
        description: folder.description,
        item: folder.steps.map((step) => {
          const template = templates[step.op];
          if (!template) throw new Error(`${step.name}: no operation ${step.op}`);
          used.add(step.op);
          const event = [script('test', stepTests(step))];
          if (step.prerequest) event.unshift(script('prerequest', step.prerequest));
          const req = request(template, step);
          const auth = personAuth(step, forPeople.has(step.op));
          if (auth) req.auth = auth;
          return {
            name: step.name,
            event,
            request: req,
            protocolProfileBehavior: template.protocolProfileBehavior,
          };
        }),
      })),
    };
    const missing = Object.keys(templates).filter((id) => !used.has(id));
    if (missing.length) throw new Error(`the walk does not call ${missing.join(', ')}`);
    fs.writeFileSync(outPath, JSON.stringify(collection, null, 2) + '\n');
    console.log(`wrote ${path.relative(process.cwd(), outPath)}`);
  });
}

main();
