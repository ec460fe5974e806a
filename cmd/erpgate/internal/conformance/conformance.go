// Package conformance is "erpgate conformance": it calls the golden named
// outcomes through an MCP server that fronts erpgate and reports, field by
// field, whether the error contract reached the MCP client intact.
package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/erpgate/erpgate/cmd/erpgate/internal/cli"
	"github.com/erpgate/erpgate/openapi"
)

// Run connects to an MCP server that fronts erpgate (erpgate's
// own /mcp, or an OpenAPI-to-MCP bridge over the contract), calls the golden
// named outcomes through it and reports, field by field, whether the error
// contract reached the MCP client intact. It fails when any outcome lost
// something. args are the flags after "erpgate conformance"; -h prints
// them to stderr and returns flag.ErrHelp. getenv is unused: every setting
// is a flag.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("erpgate conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("url", "", "MCP Streamable HTTP endpoint, such as http://127.0.0.1:8080/mcp")
	command := fs.String("cmd", "", "command line that starts an MCP server on stdio, such as 'npx -y @ivotoby/openapi-mcp-server --api-base-url http://127.0.0.1:8080 --openapi-spec http://127.0.0.1:8080/openapi.json'; leading NAME=value words set its environment")
	var headers headerFlags
	fs.Var(&headers, "header", `HTTP header for -url, "Name: value" (repeatable), such as "Authorization: Bearer <key>"`)
	timeout := fs.Duration("timeout", 2*time.Minute, "time allowed for the whole check")
	minIntact := fs.Int("min", -1, "outcomes that must arrive intact for success; all of them when negative")
	rpcErrors := fs.Bool("rpc-errors", false, "count an error that arrives as a JSON-RPC error whose message is the whole error body, code first, as signalled (for a server that cannot set isError)")
	absent := fs.String("absent", "", "comma-separated operationIds that must not be offered as tools, such as the operations of people (decide_approval,list_approvals,list_handovers,get_audit); the check fails when one is")
	var must fieldList
	fs.Var(&must, "fields", "comma-separated columns (isError, code, message, retryable, next_action, details) that must arrive ok in every outcome that has them, whatever -min says")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: erpgate conformance (-url URL | -cmd 'COMMAND LINE') [-header 'Name: value']... [-timeout 2m] [-min N] [-rpc-errors] [-fields code,next_action] [-absent op,op]")
		fmt.Fprintln(stderr, "Calls the golden named outcomes through an MCP server and reports which error fields arrive intact.")
		fs.PrintDefaults()
	}
	if err := cli.ParseFlags(fs, args, "erpgate conformance -h"); err != nil {
		return err
	}
	if (*endpoint == "") == (*command == "") || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("conformance: give exactly one of -url and -cmd")
	}
	if len(headers) > 0 && *endpoint == "" {
		return errors.New("conformance: -header applies to -url only; configure a -cmd server's headers in its own flags")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	var (
		transport mcp.Transport
		target    string
		serverLog *tailBuffer
	)
	if *endpoint != "" {
		h := http.Header{}
		for _, kv := range headers {
			h.Add(kv[0], kv[1])
		}
		transport = &mcp.StreamableClientTransport{
			Endpoint:             *endpoint,
			HTTPClient:           &http.Client{Transport: headerTransport{header: h, base: http.DefaultTransport}},
			DisableStandaloneSSE: true,
			MaxRetries:           -1,
		}
		target = *endpoint
	} else {
		words, err := splitCommand(*command)
		if err != nil {
			return fmt.Errorf("conformance: -cmd: %w", err)
		}
		var env []string
		for len(words) > 1 && isAssignment(words[0]) {
			env, words = append(env, words[0]), words[1:]
		}
		cmd := exec.Command(words[0], words[1:]...)
		if len(env) > 0 {
			cmd.Env = append(cmd.Environ(), env...)
		}
		// Bridges log every call on stderr; keep the end of it for a
		// failure report.
		serverLog = &tailBuffer{max: 4 << 10}
		cmd.Stderr = serverLog
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
		target = words[0] + " (stdio)"
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "erpgate-conformance", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return fmt.Errorf("conformance: connect to %s: %w%s", target, err, serverLog.report())
	}
	defer cs.Close()
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("conformance: list tools of %s: %w%s", target, err, serverLog.report())
		}
		tools = append(tools, t)
	}
	server := "unknown server"
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		server = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	}
	fmt.Fprintf(stdout, "conformance of %s: %s, %d tools\n\n", target, server, len(tools))
	if *absent != "" {
		for op := range strings.SplitSeq(*absent, ",") {
			// By name only: the contract describes no operation that must
			// be absent, so there is no description to find it by.
			if t, how := findTool(tools, strings.TrimSpace(op)); t != nil && how == "" {
				return fmt.Errorf("conformance: %s offers %s as the tool %s", target, op, t.Name)
			}
		}
		fmt.Fprintf(stdout, "not offered as tools: %s\n\n", *absent)
	}

	c := &checker{cs: cs, tools: tools, run: newRunPrefix(), rpcErrors: *rpcErrors}
	rows := make([]row, 0, len(goldenOutcomes))
	for _, g := range goldenOutcomes {
		rows = append(rows, c.check(ctx, g))
	}
	intact := printReport(stdout, rows)
	if *minIntact < 0 || *minIntact > len(rows) {
		*minIntact = len(rows)
	}
	if intact < *minIntact {
		return fmt.Errorf("conformance: %d of %d outcomes did not arrive intact through %s, %d must", len(rows)-intact, len(rows), target, *minIntact)
	}
	for _, f := range must {
		for _, r := range rows {
			if v := r.fields[f]; v != fieldOK && v != fieldNone && !(v == fieldRPC && *rpcErrors) {
				return fmt.Errorf("conformance: %s of %s did not arrive through %s (%s)", f, r.outcome, target, v)
			}
		}
	}
	return nil
}

// fieldList is -fields: report columns, each named once.
type fieldList []string

func (l *fieldList) String() string { return strings.Join(*l, ",") }

func (l *fieldList) Set(s string) error {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(columns, f) {
			return fmt.Errorf("%q is not one of %s", f, strings.Join(columns, ", "))
		}
		if !slices.Contains(*l, f) {
			*l = append(*l, f)
		}
	}
	return nil
}

// golden is one named outcome of the golden set, the call that produces it
// and what the agent must receive.
type golden struct {
	code string
	op   string
	args map[string]any
	// approve first requests an approval for the invoice and posts with it.
	approve bool
	// info marks an outcome that is a result, not an error.
	info       bool
	retryable  bool
	nextAction string
	details    map[string]string
	// mentions is an id the message must name.
	mentions string
}

const conformanceJustification = "Three-way match MATCHED on every line; conformance check."

var goldenOutcomes = []golden{
	{code: "INVOICE_NOT_FOUND", op: "get_invoice", args: map[string]any{"invoice_id": "5105600999"},
		nextAction: "fix_input_and_retry", details: map[string]string{"invoice_id": "5105600999", "queue": "ap_queue"}, mentions: "5105600999"},
	{code: "PO_NOT_FOUND", op: "run_three_way_match", args: map[string]any{"invoice_id": "5105600103"},
		nextAction: "fix_input_and_retry", details: map[string]string{"invoice_id": "5105600103", "po_id": "4500019822", "queue": "ap_queue"}, mentions: "4500019822"},
	{code: "SUPPLIER_NOT_FOUND", op: "run_three_way_match", args: map[string]any{"invoice_id": "5105600104"},
		nextAction: "fix_input_and_retry", details: map[string]string{"invoice_id": "5105600104", "supplier_id": "100999", "queue": "master_data", "reason": "not_in_master"}, mentions: "100999"},
	{code: "GR_MISSING", op: "run_three_way_match", args: map[string]any{"invoice_id": "5105600105"},
		nextAction: "hold_and_recheck", details: map[string]string{"invoice_id": "5105600105", "po_id": "4500018822", "item": "20"}, mentions: "4500018822"},
	{code: "PO_CLOSED", op: "run_three_way_match", args: map[string]any{"invoice_id": "5105600106"},
		nextAction: "route_to_person", details: map[string]string{"invoice_id": "5105600106", "po_id": "4500018830", "item": "10", "queue": "procurement", "reason": "delivered_and_finally_invoiced"}, mentions: "4500018830"},
	{code: "DUPLICATE_INVOICE", op: "run_three_way_match", args: map[string]any{"invoice_id": "5105600107"},
		nextAction: "route_to_person", details: map[string]string{"invoice_id": "5105600107", "supplier_id": "100043", "duplicate_of": "5105600100", "queue": "ap_team"}, mentions: "5105600107"},
	{code: "APPROVER_NOT_FOUND", op: "request_approval",
		args:       map[string]any{"invoice_id": "5105600108", "proposed_action": "post_as_invoiced", "justification": conformanceJustification},
		nextAction: "route_to_person", details: map[string]string{"invoice_id": "5105600108", "queue": "ap_lead"}, mentions: "5105600108"},
	{code: "APPROVAL_MISSING", op: "post_invoice", args: map[string]any{"invoice_id": "5105600101"},
		nextAction: "request_approval", details: map[string]string{"invoice_id": "5105600101", "reason": "absent"}, mentions: "5105600101"},
	{code: "PERIOD_CLOSED", op: "post_invoice", args: map[string]any{"invoice_id": "5105600109"}, approve: true,
		nextAction: "stop_and_escalate", details: map[string]string{"invoice_id": "5105600109", "queue": "finance"}, mentions: "5105600109"},
	{code: "TOLERANCE_EXCEEDED", op: "run_three_way_match", args: map[string]any{"invoice_id": "5105600102"}, info: true},
}

// The five fields of an error body, in their published order.
var errorFields = []string{"code", "message", "retryable", "next_action", "details"}

// Verdicts of one field.
const (
	fieldOK      = "ok"
	fieldLost    = "LOST"
	fieldChanged = "changed"
	fieldNone    = "-"
	// fieldRPC is isError of an error that arrived as a JSON-RPC error
	// carrying the whole body, code first: signalled as an error, not as a
	// tool result. It counts as kept under -rpc-errors only.
	fieldRPC = "rpc"
)

// row is the verdict on one outcome.
type row struct {
	outcome string
	tool    string
	fields  map[string]string // "isError" and the five fields
	notes   []string
	intact  bool
}

var columns = append([]string{"isError"}, errorFields...)

func newRow(g golden) row {
	r := row{outcome: g.code, tool: "-", fields: map[string]string{}}
	for _, c := range columns {
		r.fields[c] = fieldLost
	}
	if g.info {
		for _, f := range errorFields[1:] {
			r.fields[f] = fieldNone
		}
	}
	return r
}

type checker struct {
	cs        *mcp.ClientSession
	tools     []*mcp.Tool
	run       string
	n         int
	rpcErrors bool
}

// check makes the calls of one outcome and judges what arrived.
func (c *checker) check(ctx context.Context, g golden) row {
	r := newRow(g)
	t, how := findTool(c.tools, g.op)
	if t == nil {
		r.notes = append(r.notes, "no tool for "+g.op)
		return r
	}
	r.tool = t.Name
	if how != "" {
		r.notes = append(r.notes, how)
	}
	c.n++
	runID := fmt.Sprintf("%s-%d", c.run, c.n)
	args := maps(g.args, map[string]any{"run_id": runID})

	if g.approve {
		at, _ := findTool(c.tools, "request_approval")
		if at == nil {
			r.notes = append(r.notes, "no tool for request_approval")
			return r
		}
		res, err := c.call(ctx, at, maps(g.args, map[string]any{"run_id": runID,
			"proposed_action": "post_as_invoiced", "justification": conformanceJustification}))
		if err != nil {
			r.notes = append(r.notes, "request_approval failed: "+err.Error())
			return r
		}
		obj, _ := findObject(resultText(res), "approval_id")
		if obj == nil {
			obj, _ = findObject(structuredText(res), "approval_id")
		}
		id, _ := obj["approval_id"].(string)
		if res.IsError || id == "" {
			r.notes = append(r.notes, "request_approval gave no approval_id: "+clip(resultText(res), 120))
			return r
		}
		args["approval_id"] = id
	}

	res, err := c.call(ctx, t, args)
	rpc := false
	if err != nil {
		// A server that answers with a JSON-RPC error may still carry the
		// body in its message: judge the fields, with isError lost, or,
		// under -rpc-errors, signalled when the message is the whole body.
		if obj, _ := findObject(err.Error(), "code"); obj == nil || g.info {
			r.notes = append(r.notes, "call failed: "+clip(err.Error(), 160))
			return r
		}
		text := err.Error()
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && isWholeBody(rpcErr.Message) {
			text, rpc = rpcErr.Message, true
		}
		r.notes = append(r.notes, "body only in a JSON-RPC error")
		// Under -rpc-errors the JSON-RPC error is the error signal.
		res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: rpc && c.rpcErrors}
	}
	if g.info {
		judgeInfo(&r, g, res)
	} else {
		judgeError(&r, g, res)
	}
	if rpc {
		// Shown as rpc whether it counted or not.
		r.fields["isError"] = fieldRPC
		r.notes = slices.DeleteFunc(r.notes, func(n string) bool { return n == noteNotError })
	}
	return r
}

// isWholeBody reports whether s is exactly one error body that starts
// with its code, so that a client that shows only the start of a JSON-RPC
// error message still shows the code.
func isWholeBody(s string) bool {
	obj, keys, ok := wholeObject(s)
	return ok && obj["code"] != nil && len(keys) > 0 && keys[0] == "code" && strings.HasPrefix(strings.TrimSpace(s), `{"code"`)
}

func (c *checker) call(ctx context.Context, t *mcp.Tool, args map[string]any) (*mcp.CallToolResult, error) {
	return c.cs.CallTool(ctx, &mcp.CallToolParams{Name: t.Name, Arguments: shapeArgs(t.InputSchema, args)})
}

// judgeInfo checks an outcome that must arrive as a normal result.
func judgeInfo(r *row, g golden, res *mcp.CallToolResult) {
	if res.IsError {
		r.fields["isError"] = fieldChanged
		r.notes = append(r.notes, "a result arrived as an error")
	} else {
		r.fields["isError"] = fieldOK
	}
	if strings.Contains(resultText(res), g.code) || strings.Contains(structuredText(res), g.code) {
		r.fields["code"] = fieldOK
	} else {
		r.notes = append(r.notes, "content does not mention "+g.code)
	}
	r.intact = r.fields["isError"] == fieldOK && r.fields["code"] == fieldOK
}

const noteNotError = "error arrived as a normal result"

// judgeError checks an outcome that must arrive as an error result carrying
// the five fields.
func judgeError(r *row, g golden, res *mcp.CallToolResult) {
	if res.IsError {
		r.fields["isError"] = fieldOK
	} else {
		r.notes = append(r.notes, noteNotError)
	}
	text := resultText(res)
	obj, keys, where := locate(text, res)
	if obj == nil {
		if g.mentions != "" && strings.Contains(text, g.mentions) {
			r.fields["message"] = fieldOK
			r.notes = append(r.notes, "no JSON error body; text only: "+clip(text, 80))
		} else {
			r.notes = append(r.notes, "no JSON error body: "+clip(text, 80))
		}
		return
	}
	if where != "" {
		r.notes = append(r.notes, where)
	}

	r.fields["code"] = judgeValue(obj, "code", g.code)
	switch msg, ok := obj["message"].(string); {
	case !ok:
		r.fields["message"] = fieldLost
	case msg == "" || (g.mentions != "" && !strings.Contains(msg, g.mentions)):
		r.fields["message"] = fieldChanged
	default:
		r.fields["message"] = fieldOK
	}
	r.fields["retryable"] = judgeValue(obj, "retryable", g.retryable)
	r.fields["next_action"] = judgeValue(obj, "next_action", g.nextAction)
	switch d, ok := obj["details"].(map[string]any); {
	case !ok:
		r.fields["details"] = fieldLost
	default:
		r.fields["details"] = fieldOK
		for k, want := range g.details {
			if got, ok := d[k].(string); !ok || got != want {
				r.fields["details"] = fieldChanged
				r.notes = append(r.notes, fmt.Sprintf("details.%s %v, want %s", k, d[k], want))
			}
		}
	}

	var extra, missing []string
	for _, k := range keys {
		if !slices.Contains(errorFields, k) {
			extra = append(extra, k)
		}
	}
	for _, k := range errorFields {
		if !slices.Contains(keys, k) {
			missing = append(missing, k)
		}
	}
	exact := len(extra) == 0 && len(missing) == 0 && len(keys) == len(errorFields)
	switch {
	case !exact:
		r.notes = append(r.notes, fmt.Sprintf("not exactly the five fields (extra %v, missing %v)", extra, missing))
	case !slices.Equal(keys, errorFields):
		r.notes = append(r.notes, "fields reordered")
	}
	r.intact = exact
	for _, c := range columns {
		if r.fields[c] != fieldOK {
			r.intact = false
		}
	}
}

func judgeValue(obj map[string]any, key string, want any) string {
	got, ok := obj[key]
	switch {
	case !ok:
		return fieldLost
	case got != want:
		return fieldChanged
	}
	return fieldOK
}

// locate finds the error body: the text of the result as a JSON object, or
// a JSON object with a "code" inside the text (a bridge that wraps the
// body), or else structuredContent. It returns the object, its keys in
// order, and a note on where it was found when not as the whole text.
func locate(text string, res *mcp.CallToolResult) (map[string]any, []string, string) {
	if obj, keys, ok := wholeObject(text); ok && obj["code"] != nil {
		return obj, keys, ""
	}
	if obj, keys := findObject(text, "code"); obj != nil {
		return obj, keys, "wrapped"
	}
	if obj, keys := findObject(structuredText(res), "code"); obj != nil {
		return obj, keys, "in structuredContent only"
	}
	if obj, keys := prefixObject(text); obj != nil {
		return obj, keys, "body cut short"
	}
	return nil, nil, ""
}

// prefixObject reads the fields of an error body that was cut short: from
// the first `{"code"` in s, each key with a complete value, up to where
// the text ends. It returns nil when not even the code is complete.
func prefixObject(s string) (map[string]any, []string) {
	i := strings.Index(s, `{"code"`)
	if i < 0 {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s[i:]))
	if _, err := dec.Token(); err != nil {
		return nil, nil
	}
	obj := map[string]any{}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			break
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		obj[key] = v
		keys = append(keys, key)
	}
	if _, ok := obj["code"]; !ok {
		return nil, nil
	}
	return obj, keys
}

// wholeObject decodes s as exactly one JSON object.
func wholeObject(s string) (map[string]any, []string, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") {
		return nil, nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	obj, keys, err := decodeObject(dec)
	if err != nil || dec.More() {
		return nil, nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, false
	}
	return obj, keys, true
}

// findObject returns the first JSON object in s that has the key, with its
// keys in order.
func findObject(s, key string) (map[string]any, []string) {
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		obj, keys, err := decodeObject(json.NewDecoder(strings.NewReader(s[i:])))
		if err == nil {
			if _, ok := obj[key]; ok {
				return obj, keys
			}
		}
	}
	return nil, nil
}

// decodeObject decodes one JSON object and the order of its keys.
func decodeObject(dec *json.Decoder) (map[string]any, []string, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, err
	}
	kd := json.NewDecoder(bytes.NewReader(raw))
	if _, err := kd.Token(); err != nil {
		return nil, nil, err
	}
	var keys []string
	for kd.More() {
		tok, err := kd.Token()
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := kd.Decode(&skip); err != nil {
			return nil, nil, err
		}
	}
	return obj, keys, nil
}

// resultText joins the text blocks of a result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func structuredText(res *mcp.CallToolResult) string {
	if res.StructuredContent == nil {
		return ""
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return ""
	}
	return string(b)
}

// printReport prints the table, what this path keeps per field, and the
// number of intact outcomes, which it returns.
func printReport(w io.Writer, rows []row) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tTOOL\tISERROR\tCODE\tMESSAGE\tRETRYABLE\tNEXT_ACTION\tDETAILS\tNOTE")
	intact := 0
	for _, r := range rows {
		if r.intact {
			intact++
		}
		cells := []string{r.outcome, r.tool}
		for _, c := range columns {
			cells = append(cells, r.fields[c])
		}
		cells = append(cells, strings.Join(r.notes, "; "))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()

	var keeps []string
	for _, c := range columns {
		kept, of, rpc := 0, 0, 0
		for _, r := range rows {
			switch r.fields[c] {
			case fieldNone:
				continue
			case fieldOK:
				kept++
			case fieldRPC:
				rpc++
			}
			of++
		}
		k := fmt.Sprintf("%s %d/%d", c, kept, of)
		if rpc > 0 {
			k += fmt.Sprintf(" (+%d as JSON-RPC errors)", rpc)
		}
		keeps = append(keeps, k)
	}
	fmt.Fprintf(w, "\nkeeps: %s\n", strings.Join(keeps, ", "))
	fmt.Fprintf(w, "conformance: %d/%d outcomes intact\n", intact, len(rows))
	return intact
}

// findTool finds an operation's tool: the operationId itself, else the
// same name in another case or style (GetInvoice, get-invoice), else the
// one tool whose name ends with it (a bridge's prefix), else the one tool
// whose description carries the operation's description from the contract
// (a bridge that abbreviates names, such as pst-invoice for post_invoice).
func findTool(tools []*mcp.Tool, op string) (*mcp.Tool, string) {
	for _, t := range tools {
		if t.Name == op {
			return t, ""
		}
	}
	n := normalize(op)
	for _, t := range tools {
		if normalize(t.Name) == n {
			return t, ""
		}
	}
	if t := unique(tools, func(t *mcp.Tool) bool { return strings.HasSuffix(normalize(t.Name), n) }); t != nil {
		return t, ""
	}
	desc := operationDescriptions()[op]
	if desc == "" {
		return nil, ""
	}
	t := unique(tools, func(t *mcp.Tool) bool {
		return strings.Contains(strings.Join(strings.Fields(t.Description), " "), desc)
	})
	if t == nil {
		return nil, ""
	}
	return t, "tool found by description"
}

// unique returns the one tool that satisfies ok, or nil.
func unique(tools []*mcp.Tool, ok func(*mcp.Tool) bool) *mcp.Tool {
	var found *mcp.Tool
	for _, t := range tools {
		if ok(t) {
			if found != nil {
				return nil
			}
			found = t
		}
	}
	return found
}

// operationDescriptions maps each operationId of the embedded contract to
// the start of its description, with white space collapsed.
var operationDescriptions = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	doc, err := openapi.Load()
	if err != nil {
		return out
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			d := strings.Join(strings.Fields(op.Description), " ")
			if len(d) > 80 {
				d = d[:80]
			}
			out[op.OperationID] = d
		}
	}
	return out
})

// normalize drops case and separators from a name.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// shapeArgs fits the arguments to a tool's input schema: a property of the
// same name (in any case or style) at the top, or inside an object property
// such as "body" for a bridge that nests the request body. Arguments the
// tool does not take are left out.
func shapeArgs(schema any, args map[string]any) map[string]any {
	props := properties(schema)
	out := map[string]any{}
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if p := propertyName(props, k); p != "" {
			out[p] = args[k]
			continue
		}
		for _, container := range sortedKeys(props) {
			inner := properties(props[container])
			if p := propertyName(inner, k); p != "" {
				m, _ := out[container].(map[string]any)
				if m == nil {
					m = map[string]any{}
					out[container] = m
				}
				m[p] = args[k]
				break
			}
		}
	}
	return out
}

func properties(schema any) map[string]any {
	var m map[string]any
	switch s := schema.(type) {
	case map[string]any:
		m = s
	default:
		b, err := json.Marshal(schema)
		if err != nil || json.Unmarshal(b, &m) != nil {
			return nil
		}
	}
	p, _ := m["properties"].(map[string]any)
	return p
}

func propertyName(props map[string]any, name string) string {
	if _, ok := props[name]; ok {
		return name
	}
	n := normalize(name)
	for _, k := range sortedKeys(props) {
		if normalize(k) == n {
			return k
		}
	}
	return ""
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// maps merges maps into a new one; later ones win.
func maps(ms ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// newRunPrefix makes run ids that no earlier check used, so that the loop
// limits of one check never meet another's calls.
func newRunPrefix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "conformance-" + hex.EncodeToString(b)
}

// headerFlags collects -header "Name: value".
type headerFlags [][2]string

func (h *headerFlags) String() string { return fmt.Sprint(*h) }

func (h *headerFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("want \"Name: value\", got %q", s)
	}
	*h = append(*h, [2]string{name, strings.TrimSpace(value)})
	return nil
}

// headerTransport sends fixed headers on every request.
type headerTransport struct {
	header http.Header
	base   http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// splitCommand splits a command line into words the way a POSIX shell does
// for plain words, single and double quotes and backslashes; it expands
// nothing.
func splitCommand(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool
		quote rune
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]):
				i++
				cur.WriteRune(rs[i])
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			in = true
		case unicode.IsSpace(r):
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if in {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

// isAssignment reports whether a word is NAME=value.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// report is the server's recent stderr, for an error message.
func (t *tailBuffer) report() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(bytes.TrimSpace(t.buf)) == 0 {
		return ""
	}
	return "\nserver stderr (end):\n" + string(t.buf)
}
