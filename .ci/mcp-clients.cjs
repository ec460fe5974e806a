// The README's two MCP client configurations, used as the clients use them,
// against a running gateway; run by .ci/mcp-clients.sh, which sets the
// environment below and puts the pinned packages on NODE_PATH.
//
// 1. The Claude Desktop / Cursor block (mcpServers): its command and args
//    (npx -y mcp-remote <url> --header X-API-Key:${ERPGATE_KEY}) started with
//    its env, as Claude Desktop starts a local server, and driven over stdio
//    by the official TypeScript SDK: the 1.x SDK as a 2025-11-25 client and
//    the 2.x client pinned to 2026-07-28.
// 2. The VS Code block (servers, "type": "http"): its url and headers, the
//    ${input:...} filled in, over the SDKs' StreamableHTTPClientTransport, in
//    both revisions.
//
// Each client lists the tools, calls run_three_way_match with a run_id twice
// (the second call is LOOP_DETECTED in that run: the run id arrived), a
// failing tool (get_invoice 5105600999, INVOICE_NOT_FOUND as an isError
// result whose text is exactly the five fields), get_invoice with the id as
// a JSON integer, and an unknown tool, whose JSON-RPC error must carry the
// five fields where the SDK puts an error's data. Fails on the first check
// that does not hold.
'use strict';
const fs = require('fs');
const path = require('path');

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`mcp-clients.cjs: ${name} is not set`);
  return v;
};
const readmePath = env('README');
const port = env('GATEWAY_PORT');
const key = env('AGENT_KEY');
const npmPrefix = env('NPM_PREFIX');

function check(ok, what, detail) {
  if (!ok) throw new Error(`mcp-clients.cjs: ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
  console.log(`ok: ${what}`);
}

// The ```json blocks of the README, parsed.
function jsonBlocks(text) {
  const blocks = [];
  const re = /^```json\n([\s\S]*?)^```$/gm;
  for (let m; (m = re.exec(text)); ) {
    try {
      blocks.push(JSON.parse(m[1]));
    } catch (e) {
      throw new Error(`mcp-clients.cjs: a json block of ${readmePath} is not JSON: ${e.message}`);
    }
  }
  return blocks;
}

// The README's URL with the running gateway's port: the same scheme, host
// and path.
function gatewayURL(readmeURL) {
  const u = new URL(readmeURL);
  check(u.protocol === 'http:' && u.hostname === 'localhost' && u.pathname === '/mcp',
    `the README's URL ${readmeURL} is the local gateway's /mcp`);
  u.port = port;
  return u.toString();
}

const readme = fs.readFileSync(readmePath, 'utf8');
const blocks = jsonBlocks(readme);
const vscode = blocks.find((b) => b.servers && Object.values(b.servers).some((s) => s.type === 'http'));
const desktop = blocks.find((b) => b.mcpServers);
check(vscode !== undefined, `${readmePath} has a VS Code block (servers with "type": "http")`);
check(desktop !== undefined, `${readmePath} has a Claude Desktop block (mcpServers)`);

// VS Code: url and headers, each ${input:<id>} of its inputs replaced by
// the key the person would type.
const [httpName, httpServer] = Object.entries(vscode.servers).find(([, s]) => s.type === 'http');
const inputs = new Set((vscode.inputs || []).map((i) => i.id));
const httpHeaders = {};
for (const [name, value] of Object.entries(httpServer.headers || {})) {
  httpHeaders[name] = value.replace(/\$\{input:([^}]+)\}/g, (whole, id) => {
    check(inputs.has(id), `the VS Code header ${name} asks for the declared input ${id}`);
    return key;
  });
}
check(Object.keys(httpHeaders).length > 0 && !JSON.stringify(httpHeaders).includes('${'),
  `the VS Code server ${httpName} sends the key in a header`);
const httpURL = gatewayURL(httpServer.url);

// Claude Desktop: command, args and env as written, the env's placeholder
// value replaced by the key and the URL's port by the gateway's.
const [stdioName, stdioServer] = Object.entries(desktop.mcpServers)[0];
check(stdioServer.command === 'npx' && stdioServer.args.includes('mcp-remote'),
  `the Claude Desktop server ${stdioName} starts mcp-remote with npx`, stdioServer);
const stdioArgs = stdioServer.args.map((a) => (/^https?:\/\//.test(a) ? gatewayURL(a) : a));
const stdioEnv = {};
for (const name of Object.keys(stdioServer.env || {})) stdioEnv[name] = key;
check(Object.keys(stdioEnv).length > 0 && stdioArgs.some((a) => Object.keys(stdioEnv).some((n) => a.includes('${' + n + '}'))),
  `the Claude Desktop server ${stdioName} passes the key from its env to mcp-remote`);

// The version of the installed package name, from the package.json above
// one of its files.
function versionOf(name, file) {
  for (let dir = path.dirname(require.resolve(file)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const p = path.join(dir, 'package.json');
    if (fs.existsSync(p)) {
      const pkg = JSON.parse(fs.readFileSync(p, 'utf8'));
      if (pkg.name === name) return pkg.version;
    }
  }
  throw new Error(`mcp-clients.cjs: no package.json of ${name}`);
}

const sdk1 = {
  Client: require('@modelcontextprotocol/sdk/client/index.js').Client,
  Stdio: require('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport,
  HTTP: require('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport,
  version: versionOf('@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/client/index.js'),
};
const sdk2 = {
  Client: require('@modelcontextprotocol/client').Client,
  Stdio: require('@modelcontextprotocol/client/stdio').StdioClientTransport,
  HTTP: require('@modelcontextprotocol/client').StreamableHTTPClientTransport,
  version: versionOf('@modelcontextprotocol/client', '@modelcontextprotocol/client'),
};

// The two clients: the 1.x SDK speaks up to 2025-11-25; the 2.x client is
// pinned to 2026-07-28 (per-request _meta, no initialize, the standard
// request headers).
const clients = [
  { revision: '2025-11-25', sdk: sdk1, name: `@modelcontextprotocol/sdk ${sdk1.version}`, options: {} },
  { revision: '2026-07-28', sdk: sdk2, name: `@modelcontextprotocol/client ${sdk2.version}`, options: { versionNegotiation: { mode: { pin: '2026-07-28' } } } },
];

// tap records the JSON-RPC messages a transport sends and receives.
function tap(transport) {
  const sent = [];
  const received = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message);
    return send(message, options);
  };
  let onmessage;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => onmessage,
    set: (fn) => {
      onmessage = fn && ((message, extra) => {
        received.push(message);
        return fn(message, extra);
      });
    },
  });
  return { sent, received };
}

// The five fields, exactly, in an error's text or data.
function fiveFields(v, what) {
  const o = typeof v === 'string' ? JSON.parse(v) : v;
  const keys = Object.keys(o || {});
  check(keys.join(',') === 'code,message,retryable,next_action,details' &&
    typeof o.message === 'string' && typeof o.retryable === 'boolean' && typeof o.details === 'object',
  `${what}: the five fields, in order`, o);
  return o;
}

async function exercise(client, label, revision, wire) {
  const list = await client.listTools();
  check(list.tools.length === 14 && list.tools.some((t) => t.name === 'run_three_way_match'), `${label}: tools/list has the 14 tools`);

  const run = `clients-${revision}-${label.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}`;
  const args = { invoice_id: '5105600102', run_id: run };
  const first = await client.callTool({ name: 'run_three_way_match', arguments: args });
  check(!first.isError && first.structuredContent && first.structuredContent.result === 'TOLERANCE_EXCEEDED',
    `${label}: run_three_way_match 5105600102 with run_id is TOLERANCE_EXCEEDED`, first);
  const again = await client.callTool({ name: 'run_three_way_match', arguments: args });
  const loop = again.isError && fiveFields(again.content[0].text, `${label}: the repeat`);
  check(loop && loop.code === 'LOOP_DETECTED' && loop.details.run_id === run,
    `${label}: the same call again is LOOP_DETECTED in run ${run}: run_id arrived`, again);

  const missing = await client.callTool({ name: 'get_invoice', arguments: { invoice_id: '5105600999' } });
  check(missing.isError === true && missing.content.length === 1 && missing.content[0].type === 'text',
    `${label}: get_invoice 5105600999 is an isError result with one text block`, missing);
  const nf = fiveFields(missing.content[0].text, `${label}: get_invoice 5105600999`);
  check(nf.code === 'INVOICE_NOT_FOUND' && nf.next_action === 'fix_input_and_retry' && nf.details.invoice_id === '5105600999' &&
    nf.details.queue === 'ap_queue', `${label}: get_invoice 5105600999 is INVOICE_NOT_FOUND with its five fields intact`, nf);

  const asNumber = await client.callTool({ name: 'get_invoice', arguments: { invoice_id: 5105600999 } });
  check(asNumber.isError && fiveFields(asNumber.content[0].text, `${label}: get_invoice 5105600999 as a number`).code === 'INVOICE_NOT_FOUND',
    `${label}: get_invoice with invoice_id the JSON integer 5105600999 is INVOICE_NOT_FOUND`, asNumber);
  const found = await client.callTool({ name: 'get_invoice', arguments: { invoice_id: 5105600101 } });
  check(!found.isError && found.structuredContent.invoice_id === '5105600101',
    `${label}: get_invoice with invoice_id the JSON integer 5105600101 reads the invoice`, found);

  let thrown;
  try {
    await client.callTool({ name: 'delete_invoice', arguments: { invoice_id: '5105600101' } });
  } catch (e) {
    thrown = e;
  }
  check(thrown !== undefined && thrown.code === -32602, `${label}: an unknown tool is a JSON-RPC error -32602`, thrown && thrown.message);
  const unknown = fiveFields(thrown.data, `${label}: the unknown tool's error data`);
  check(unknown.code === 'INVALID_REQUEST' && unknown.details.field === 'name',
    `${label}: the unknown tool's error data is INVALID_REQUEST naming name`, unknown);

  // The calls went out in the revision: the 2026-07-28 client's carry it
  // in their _meta, the 2025-11-25 client's initialize asked for it.
  const calls = wire.sent.filter((m) => m.method === 'tools/call');
  if (revision === '2026-07-28') {
    check(calls.length > 0 && calls.every((m) => m.params._meta && m.params._meta['io.modelcontextprotocol/protocolVersion'] === revision),
      `${label}: every tools/call carries protocol version ${revision} in its _meta`);
  } else {
    const init = wire.sent.find((m) => m.method === 'initialize');
    const answer = init && wire.received.find((m) => m.id === init.id);
    check(answer && answer.result && answer.result.protocolVersion === revision,
      `${label}: initialize agreed on ${revision}`, answer);
  }
}

async function main() {
  const started = Date.now();
  for (const c of clients) {
    // 1. mcp-remote, started as Claude Desktop starts it. The pinned
    // mcp-remote is installed in NPM_PREFIX: npx, run there and offline,
    // takes it from there and downloads nothing.
    {
      const label = `mcp-remote (${c.name}, ${c.revision})`;
      const t0 = Date.now();
      const transport = new c.sdk.Stdio({
        command: stdioServer.command,
        args: stdioArgs,
        env: { ...process.env, ...stdioEnv, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
        cwd: npmPrefix,
        stderr: 'pipe',
      });
      let stderr = '';
      if (transport.stderr) transport.stderr.on('data', (d) => { stderr += d; });
      const wire = tap(transport);
      const client = new c.sdk.Client({ name: 'erpgate-ci', version: '1.0.0' }, c.options);
      try {
        await client.connect(transport);
        await exercise(client, label, c.revision, wire);
      } catch (e) {
        console.error(`--- ${label}: mcp-remote's stderr\n${stderr.split(key).join('<key>')}`);
        throw e;
      } finally {
        await client.close();
      }
      console.log(`${label}: ${Date.now() - t0} ms`);
    }
    // 2. The VS Code configuration: url and headers over Streamable HTTP.
    {
      const label = `HTTP config (${c.name}, ${c.revision})`;
      const t0 = Date.now();
      const transport = new c.sdk.HTTP(new URL(httpURL), { requestInit: { headers: httpHeaders } });
      const wire = tap(transport);
      const client = new c.sdk.Client({ name: 'erpgate-ci', version: '1.0.0' }, c.options);
      try {
        await client.connect(transport);
        await exercise(client, label, c.revision, wire);
      } finally {
        await client.close();
      }
      console.log(`${label}: ${Date.now() - t0} ms`);
    }
  }
  console.log(`all clients: ${Date.now() - started} ms`);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
