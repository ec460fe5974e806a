package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/erpgate/erpgate/cmd/internal/telemetry/otlptest"
)

// The MCP bench: get_invoice over REST, as tools/call on the gateway's
// /mcp, and as tools/call through an OpenAPI-to-MCP bridge in front of the
// gateway's REST API, each a closed loop of the same concurrency for the
// same time, in rounds over the paths.

// Names of the paths in the MCP table.
const (
	pathREST      = "REST"            // GET /invoices/{id}
	pathMCP       = "/mcp"            // tools/call get_invoice on the gateway, protocol mcpProtocol
	pathMCPLegacy = "/mcp-2025-06-18" // the same, protocol mcpProtocolLegacy
	pathBridge    = "bridge"          // tools/call through mcpBridge to REST, protocol mcpProtocolLegacy
)

// mcpBridge is the OpenAPI-to-MCP bridge the bench puts in front of the
// gateway, as .ci/mcp.sh installs it.
const mcpBridge = "@ivotoby/openapi-mcp-server@1.16.1"

// MCP goal: /mcp's throughput as a share of REST's in the same run, and
// the published anchor of one MCP gateway pod (IBM ContextForge).
const (
	goalMCPShare = 0.8
	anchorLow    = 250
	anchorHigh   = 400
)

// The protocol versions of the bench's clients: the gateway's current
// revision, whose clients send each call with its protocol version and
// capabilities in _meta and the standard request headers (Mcp-Method,
// Mcp-Name), without initializing; and the revision before it, whose
// clients initialize once (the bridge's revision too).
const (
	mcpProtocol       = "2026-07-28"
	mcpProtocolLegacy = "2025-06-18"
)

// Defaults of the mcp command line.
const (
	defaultMCPConcurrency = 32
	defaultMCPLength      = 8 * time.Second
	defaultMCPRounds      = 2
)

type mcpConfig struct {
	concurrency int
	length      time.Duration // per path, over all rounds, warm-ups included
	rounds      int
	erpgate     string // erpgate binary; "" builds one
	bridge      string // "off", "npm" (install mcpBridge) or the bridge's binary
	traces      bool   // the gateway exports every span to a receiver that discards them
}

func parseMCP(args []string, stderr io.Writer) (mcpConfig, error) {
	fs := flag.NewFlagSet("loadbench mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg mcpConfig
	fs.IntVar(&cfg.concurrency, "c", defaultMCPConcurrency, "concurrent calls of each path's closed loop")
	fs.DurationVar(&cfg.length, "d", defaultMCPLength, "time each path is driven, over all rounds, its 10 % warm-up per round included")
	fs.IntVar(&cfg.rounds, "rounds", defaultMCPRounds, "turns over the paths, so that load from elsewhere falls on all alike")
	fs.StringVar(&cfg.erpgate, "erpgate", "", "erpgate binary (default: built from this repository with go build)")
	fs.StringVar(&cfg.bridge, "bridge", "npm", "the bridge's command: npm installs "+mcpBridge+" with npm; off leaves the bridge out")
	fs.BoolVar(&cfg.traces, "traces", false, "trace every call: the gateway exports its spans over OTLP to a receiver in the bench that discards them")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return mcpConfig{}, err
		}
		return mcpConfig{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "loadbench mcp: unexpected arguments %q\n", fs.Args())
	case cfg.concurrency < 1:
		fmt.Fprintln(stderr, "loadbench mcp: -c must be at least 1")
	case cfg.rounds < 1:
		fmt.Fprintln(stderr, "loadbench mcp: -rounds must be at least 1")
	case cfg.length <= 0:
		fmt.Fprintln(stderr, "loadbench mcp: -d must be positive")
	case cfg.bridge == "":
		fmt.Fprintln(stderr, "loadbench mcp: -bridge must be npm, off or a command")
	default:
		return cfg, nil
	}
	return mcpConfig{}, errUsage
}

// caller makes one call of a path; a worker's caller keeps what its client
// keeps between calls (an MCP session).
type caller func(ctx context.Context) error

// mcpPath is one way of reading an invoice.
type mcpPath struct {
	name string
	// start sets a worker's client up (initialize, for MCP) and returns its
	// caller.
	// caller and what ends it.
	start func(ctx context.Context) (caller, func(), error)
	procs []*child // whose CPU time counts
	tr    *http.Transport
	// results
	calls, answered, failed int64
	firstErr                string
	elapsed                 time.Duration
	lat                     []time.Duration
	cpu                     time.Duration
	cpuKnown                bool
	// rounds holds each drive's CPU time per call, warm-up included, when
	// known: what the traces bench compares round by round.
	rounds []time.Duration
}

func (p *mcpPath) rps() float64 {
	if p.elapsed <= 0 {
		return 0
	}
	return float64(p.answered-p.failed) / p.elapsed.Seconds()
}

func (p *mcpPath) quantile(q float64) time.Duration {
	return stats{lat: p.lat}.quantile(q)
}

// drive runs the closed loop of n workers on p for d and adds what it
// measured after the first tenth to p.
func (p *mcpPath) drive(ctx context.Context, n int, d time.Duration) error {
	callers := make([]caller, n)
	for i := range callers {
		c, done, err := p.start(ctx)
		if err != nil {
			return fmt.Errorf("%s: set up client %d: %w", p.name, i+1, err)
		}
		defer done()
		callers[i] = c
	}
	var cpu0 time.Duration
	cpuOK := true
	for _, c := range p.procs {
		t, err := cpuTime(c.pid(), true)
		cpuOK = cpuOK && err == nil
		cpu0 += t
	}
	start := time.Now()
	from, end := start.Add(d/10), start.Add(d)
	var (
		mu                      sync.Mutex
		lat                     []time.Duration
		calls, answered, failed atomic.Int64
		all                     atomic.Int64 // warm-up included
		firstErr                string
		wg                      sync.WaitGroup
	)
	for _, call := range callers {
		wg.Go(func() {
			var mine []time.Duration
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				counted := !t0.Before(from)
				if counted {
					calls.Add(1)
				}
				err := call(ctx)
				t1 := time.Now()
				all.Add(1)
				if !counted {
					continue
				}
				answered.Add(1)
				mine = append(mine, t1.Sub(t0))
				if err != nil {
					failed.Add(1)
					mu.Lock()
					if firstErr == "" {
						firstErr = err.Error()
					}
					mu.Unlock()
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(from)
	var cpu1 time.Duration
	for _, c := range p.procs {
		t, err := cpuTime(c.pid(), true)
		cpuOK = cpuOK && err == nil
		cpu1 += t
	}
	p.calls += calls.Load()
	p.answered += answered.Load()
	p.failed += failed.Load()
	if p.firstErr == "" {
		p.firstErr = firstErr
	}
	p.elapsed += elapsed
	p.lat = append(p.lat, lat...)
	slices.Sort(p.lat)
	if cpuOK && len(p.procs) > 0 {
		p.cpu += cpu1 - cpu0
		p.cpuKnown = true
		if n := all.Load(); n > 0 {
			p.rounds = append(p.rounds, (cpu1-cpu0)/time.Duration(n))
		}
	}
	return ctx.Err()
}

// cpuPerCall is the CPU time of p's processes per call, or 0 when unknown.
func (p *mcpPath) cpuPerCall() time.Duration {
	if !p.cpuKnown || p.answered == 0 {
		return 0
	}
	// The warm-up's calls are not counted, its CPU time is: a tenth.
	return time.Duration(float64(p.cpu) * 0.9 / float64(p.answered))
}

func newMCPTransport(conns int) *http.Transport {
	return &http.Transport{MaxIdleConnsPerHost: conns, MaxIdleConns: conns,
		IdleConnTimeout: time.Minute, DisableCompression: true}
}

// restPath reads the invoice with GET /invoices/{id}.
func restPath(base string, tr *http.Transport) *mcpPath {
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	url := base + "/invoices/" + invoiceID
	return &mcpPath{name: pathREST, tr: tr, start: func(context.Context) (caller, func(), error) {
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Accept", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(invoiceID)) {
				return fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
			}
			return nil
		}, func() {}, nil
	}}
}

// mcpClient is one MCP client over Streamable HTTP: it initializes once,
// keeps the session id the server gives (none from a stateless server),
// and then calls the tool again and again, as an agent's client does.
// When the server answers a request with 202 Accepted, as the bridge
// does, the answer comes on the event stream the client opened with GET.
type mcpClient struct {
	client   *http.Client
	url      string
	protocol string
	session  string
	ids      *atomic.Int64 // shared by all clients of a server: the bridge keys answers by id alone
	events   *bufio.Reader // the GET stream; nil when answers come on the POST
}

// post sends one JSON-RPC message and returns the JSON-RPC answer (the
// body, or the first event of an event stream), nil for a notification.
func (c *mcpClient) post(ctx context.Context, msg []byte, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", c.protocol)
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range bytes.Lines(body) {
			if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok {
				return bytes.TrimSpace(data), nil
			}
		}
		return nil, fmt.Errorf("an event stream without data: %.200s", body)
	}
	return body, nil
}

// request sends a JSON-RPC request, with header, and returns its result.
func (c *mcpClient) request(ctx context.Context, method string, params any, header http.Header) (json.RawMessage, error) {
	var ans struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	call, err := c.newCall(method, params)
	if err != nil {
		return nil, err
	}
	if err := c.send(ctx, call, header, &ans, func() *rpcError { return ans.Error }); err != nil {
		return nil, err
	}
	return ans.Result, nil
}

type rpcError struct {
	Message string `json:"message"`
}

// rpcCall is a JSON-RPC request encoded but for its id, so that a client
// calling again and again encodes its message once, as the REST client
// builds its URL once: the load client's own work must not weigh on one
// path more than on another, on a machine it shares with the servers.
type rpcCall struct {
	method        string
	before, after []byte // the message before and after the id
}

func (c *mcpClient) newCall(method string, params any) (rpcCall, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return rpcCall{}, err
	}
	m, err := json.Marshal(method)
	if err != nil {
		return rpcCall{}, err
	}
	return rpcCall{method: method, before: []byte(`{"jsonrpc":"2.0","id":`),
		after: fmt.Appendf(nil, `,"method":%s,"params":%s}`, m, p)}, nil
}

// send sends call with a new id and decodes its answer into ans, once;
// rpcErr returns the answer's JSON-RPC error, if any.
func (c *mcpClient) send(ctx context.Context, call rpcCall, header http.Header, ans any, rpcErr func() *rpcError) error {
	id := c.ids.Add(1)
	msg := make([]byte, 0, len(call.before)+20+len(call.after))
	msg = append(strconv.AppendInt(append(msg, call.before...), id, 10), call.after...)
	body, err := c.post(ctx, msg, header)
	if err != nil {
		return err
	}
	if body == nil {
		if body, err = c.event(id); err != nil {
			return fmt.Errorf("%s: %w", call.method, err)
		}
	}
	if err := json.Unmarshal(body, ans); err != nil {
		return fmt.Errorf("%s: %w: %.200s", call.method, err, body)
	}
	if e := rpcErr(); e != nil {
		return fmt.Errorf("%s: JSON-RPC error %s", call.method, e.Message)
	}
	return nil
}

// event reads the event stream up to the answer to the request id.
func (c *mcpClient) event(id int64) ([]byte, error) {
	if c.events == nil {
		return nil, errors.New("the request was accepted, and there is no event stream to answer it on")
	}
	for {
		line, err := c.events.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("event stream: %w", err)
		}
		data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
		if !ok {
			continue
		}
		var m struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(data, &m) == nil && m.ID == id {
			return bytes.TrimSpace(data), nil
		}
	}
}

// listen opens the session's event stream with GET, for a server that
// answers on it, and returns what closes it.
func (c *mcpClient) listen(ctx context.Context, tr *http.Transport) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", c.protocol)
	req.Header.Set("Mcp-Session-Id", c.session)
	type answer struct {
		resp *http.Response
		err  error
	}
	answers := make(chan answer, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Do(req)
		answers <- answer{resp, err}
	}()
	// A server may send the stream's headers only with its first event:
	// ping until one arrives (a ping answered before the stream was open
	// is lost).
	var resp *http.Response
	for resp == nil {
		id := c.ids.Add(1)
		if _, err := c.post(ctx, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id), nil); err != nil {
			cancel()
			return nil, err
		}
		select {
		case a := <-answers:
			if a.err != nil {
				cancel()
				return nil, a.err
			}
			resp = a.resp
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			cancel()
			return nil, ctx.Err()
		}
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("GET event stream: status %d", resp.StatusCode)
	}
	c.events = bufio.NewReader(resp.Body)
	return func() {
		cancel()
		resp.Body.Close()
	}, nil
}

// clientInfo names the bench's clients.
var clientInfo = map[string]any{"name": "loadbench", "version": "1.0.0"}

// initialize opens the client's session; a client of mcpProtocol has none
// to open.
func (c *mcpClient) initialize(ctx context.Context) error {
	if c.protocol == mcpProtocol {
		return nil
	}
	if _, err := c.request(ctx, "initialize", map[string]any{"protocolVersion": c.protocol,
		"capabilities": map[string]any{}, "clientInfo": clientInfo}, nil); err != nil {
		return err
	}
	_, err := c.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)
	return err
}

// toolCaller returns the caller of tools/call of tool with the invoice id.
func (c *mcpClient) toolCaller(tool string) caller {
	params := map[string]any{"name": tool, "arguments": map[string]any{"invoice_id": invoiceID}}
	var header http.Header
	if c.protocol == mcpProtocol {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    c.protocol,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         clientInfo,
		}
		header = http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {tool}}
	}
	call, err := c.newCall("tools/call", params)
	return func(ctx context.Context) error {
		if err != nil {
			return err
		}
		var ans struct {
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
			Error *rpcError `json:"error"`
		}
		if err := c.send(ctx, call, header, &ans, func() *rpcError { return ans.Error }); err != nil {
			return err
		}
		if r := ans.Result; r.IsError || len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, invoiceID) {
			return fmt.Errorf("tools/call %s: an error or no invoice: %+v", tool, r)
		}
		return nil
	}
}

// toolMCPPath calls tool on the MCP endpoint at url in protocol; with
// stream, each client takes its answers on an event stream of its own.
func toolMCPPath(name, url, tool, protocol string, tr *http.Transport, stream bool) *mcpPath {
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ids := &atomic.Int64{}
	return &mcpPath{name: name, tr: tr, start: func(ctx context.Context) (caller, func(), error) {
		c := &mcpClient{client: client, url: url, protocol: protocol, ids: ids}
		if err := c.initialize(ctx); err != nil {
			return nil, nil, err
		}
		done := func() {}
		if stream {
			var err error
			if done, err = c.listen(ctx, tr); err != nil {
				return nil, nil, err
			}
		}
		return c.toolCaller(tool), done, nil
	}}
}

// bridgeTool finds the bridge's tool of get_invoice: the one whose name,
// in lower case and without separators, is or ends with getinvoice.
func bridgeTool(ctx context.Context, url string, tr *http.Transport) (string, error) {
	c := &mcpClient{client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, url: url, protocol: mcpProtocolLegacy, ids: &atomic.Int64{}}
	if err := c.initialize(ctx); err != nil {
		return "", err
	}
	res, err := c.request(ctx, "tools/list", map[string]any{}, nil)
	if err != nil {
		return "", err
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		return "", err
	}
	var names []string
	for _, t := range list.Tools {
		n := strings.NewReplacer("_", "", "-", "", ".", "").Replace(strings.ToLower(t.Name))
		if strings.HasSuffix(n, "getinvoice") {
			return t.Name, nil
		}
		names = append(names, t.Name)
	}
	return "", fmt.Errorf("no get_invoice among the bridge's tools %q", names)
}

// startBridge installs the bridge (with -bridge npm) and runs it over
// Streamable HTTP in front of the gateway at gwURL, as a user of the
// bridge would, and returns it with its MCP endpoint.
func startBridge(ctx context.Context, cfg mcpConfig, gwURL, dir string) (*child, string, error) {
	bin := cfg.bridge
	if bin == "npm" {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return nil, "", fmt.Errorf("npm not installed (Node.js with npm runs the bridge): %w", err)
		}
		prefix := filepath.Join(dir, "npm")
		out, err := exec.CommandContext(ctx, npm, "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error",
			"--prefix", prefix, mcpBridge).CombinedOutput()
		if err != nil {
			return nil, "", fmt.Errorf("npm install %s: %w\n%s", mcpBridge, err, out)
		}
		bin = filepath.Join(prefix, "node_modules", ".bin", "openapi-mcp-server")
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--transport", "http", "--host", host, "--port", port, "--path", "/mcp",
		"--api-base-url", gwURL, "--openapi-spec", gwURL+"/openapi.json", "--verbose", "false")
	logFile := filepath.Join(dir, "bridge.log")
	cmd.Stdout = io.Discard
	c, err := startChild("bridge", cmd, logFile)
	if err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return nil, "", fmt.Errorf("the bridge exited at start:\n%s", logTail(logFile))
		default:
		}
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return c, "http://" + addr + "/mcp", nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.stop()
	return nil, "", errors.New("the bridge did not listen within 30s")
}

// runMCP runs the MCP bench and prints its table and goals.
func runMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseMCP(args, stderr)
	if err != nil {
		return err
	}
	m := readMachine()
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, "loadbench mcp: "+format+"\n", a...) }
	ws, err := openSimWorkspace(ctx, "mcp", cfg.erpgate, progress)
	if err != nil {
		return err
	}
	defer ws.close()
	dir, erp, bin := ws.dir, ws.erp, ws.bin
	var env []string
	if cfg.traces {
		receiver := otlptest.NewDiscarding()
		defer receiver.Close()
		env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + receiver.URL(), "OTEL_SERVICE_NAME=loadbench"}
	}
	gw, err := startErpgateEnv(bin, erp.url, dir, "erpgate", false, env)
	if err != nil {
		return err
	}
	defer gw.stop()

	conns := 2 * cfg.concurrency
	rest := restPath(gw.url, newMCPTransport(conns))
	rest.procs = []*child{gw}
	native := toolMCPPath(pathMCP, gw.url+"/mcp", "get_invoice", mcpProtocol, newMCPTransport(conns), false)
	native.procs = []*child{gw}
	legacy := toolMCPPath(pathMCPLegacy, gw.url+"/mcp", "get_invoice", mcpProtocolLegacy, newMCPTransport(conns), false)
	legacy.procs = []*child{gw}
	paths := []*mcpPath{rest, native, legacy}
	var bridgeNote string
	if cfg.bridge == "off" {
		bridgeNote = "bridge left out (-bridge off)"
	} else {
		progress("starting %s in front of erpgate", mcpBridge)
		br, url, err := startBridge(ctx, cfg, gw.url, dir)
		if err != nil {
			bridgeNote = fmt.Sprintf("no bridge row: %v", err)
		} else {
			defer br.stop()
			tr := newMCPTransport(conns)
			tool, err := bridgeTool(ctx, url, tr)
			if err != nil {
				return fmt.Errorf("bridge: %w", err)
			}
			// The bridge answers a tools/call POST with 202 and the
			// result on the session's GET stream.
			p := toolMCPPath(pathBridge, url, tool, mcpProtocolLegacy, tr, true)
			p.procs = []*child{br, gw}
			paths = append(paths, p)
		}
	}
	defer func() {
		for _, p := range paths {
			p.tr.CloseIdleConnections()
		}
	}()

	d := cfg.length / time.Duration(cfg.rounds)
	for round := range cfg.rounds {
		for _, p := range paths {
			progress("round %d of %d: %s, %d concurrent, %s", round+1, cfg.rounds, p.name, cfg.concurrency, d)
			if err := p.drive(ctx, cfg.concurrency, d); err != nil {
				return err
			}
		}
	}
	printMCP(stdout, m, cfg, paths, bridgeNote)
	return nil
}

func printMCP(w io.Writer, m machine, cfg mcpConfig, paths []*mcpPath, bridgeNote string) {
	fmt.Fprintf(w, "machine: nproc %d, %s, %s, GOMAXPROCS %d; load average %s at start, %s at end\n",
		m.cpus, m.model, m.goVersion, runtime.GOMAXPROCS(0), m.load, loadAverage())
	fmt.Fprintf(w, "get_invoice, closed loop of %d concurrent calls per path, %s per path in %d rounds (10 %% warm-up per round)\n",
		cfg.concurrency, cfg.length, cfg.rounds)
	fmt.Fprintf(w, "MCP clients of %s send each call with its _meta and standard headers; those of %s initialize once, then call\n",
		mcpProtocol, mcpProtocolLegacy)
	if cfg.traces {
		fmt.Fprintln(w, "traced: the gateway exports every span over OTLP/HTTP to a receiver in the bench that discards them")
	}
	if bridgeNote != "" {
		fmt.Fprintln(w, bridgeNote)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "path\tcalls\tanswered\terrors\treq/s\tp50\tp99\tCPU/call\tof REST")
	rest := paths[0].rps()
	for _, p := range paths {
		cpu := "n/a"
		if c := p.cpuPerCall(); c > 0 {
			cpu = dur(c)
		}
		share := "n/a"
		if rest > 0 {
			share = fmt.Sprintf("%.0f%%", 100*p.rps()/rest)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\n", p.name, p.calls, p.answered, p.failed,
			p.rps(), dur(p.quantile(0.5)), dur(p.quantile(0.99)), cpu, share)
	}
	tw.Flush()
	fmt.Fprintln(w, "REST: GET /invoices/{id}; "+pathMCP+": tools/call get_invoice on the gateway's /mcp in "+mcpProtocol+"; "+
		pathMCPLegacy+": the same in "+mcpProtocolLegacy+"; bridge: tools/call through "+mcpBridge+" (Streamable HTTP, "+mcpProtocolLegacy+") to REST")
	fmt.Fprintln(w, "CPU/call: erpgate's CPU time per call; on the bridge row the bridge's and erpgate's together")
	for _, p := range paths {
		if p.failed > 0 {
			fmt.Fprintf(w, "%s: %d of %d calls failed, first: %s\n", p.name, p.failed, p.answered, p.firstErr)
		}
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	native := paths[1]
	share := 0.0
	if rest > 0 {
		share = native.rps() / rest
	}
	goal(tw, "/mcp req/s at least 80 % of REST's", fmt.Sprintf("%.0f %%", 100*share), verdict(share >= goalMCPShare && native.failed == 0))
	goal(tw, fmt.Sprintf("/mcp req/s beside the anchor of %d-%d per pod", anchorLow, anchorHigh), fmt.Sprintf("%.0f/s, %.1fx the anchor's top", native.rps(), native.rps()/anchorHigh), verdict(native.rps() >= anchorLow && native.failed == 0))
	for _, p := range paths[2:] {
		what := "in " + mcpProtocolLegacy
		if p.name == pathBridge {
			what = "through the bridge (" + mcpBridge + ")"
		}
		fmt.Fprintf(tw, "figure\t%s %s\t%.0f/s, %.0f %% of REST\t\n", pathMCP, what, p.rps(), 100*p.rps()/max(rest, 1))
	}
	tw.Flush()
}
