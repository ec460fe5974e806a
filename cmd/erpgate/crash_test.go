package main

import (
	"github.com/shopspring/decimal"

	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sim"
)

// The crash tests run the gateway as a process of its own (this test
// binary again, in crashChild) that kills itself with SIGKILL right after a
// named step of a write, then start it again over the same records and
// send the same call with the same key.
const (
	crashChildEnv = "ERPGATE_TEST_CRASH_CHILD" // the gateway's arguments, as JSON
	crashAtEnv    = "ERPGATE_TEST_CRASH_AT"    // the step to die after; empty: never
)

func TestMain(m *testing.M) {
	if args := os.Getenv(crashChildEnv); args != "" {
		os.Exit(crashChild(args))
	}
	if args := os.Getenv(mainChildEnv); args != "" {
		os.Exit(mainChild(args))
	}
	os.Exit(m.Run())
}

// crashChild serves the gateway with its records and ERP wrapped so that it
// dies after the step named in crashAtEnv.
func crashChild(argsJSON string) int {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg, err := parseConfig(args, func(string) string { return "" }, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	at := os.Getenv(crashAtEnv)
	cfg.keyLease = 2 * time.Second
	cfg.wrapRecords = func(s records.Store) records.Store { return &crashStore{Store: s, at: at} }
	cfg.wrapERP = func(c erp.Client) erp.Client { return &crashERP{Client: c, at: at} }
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// die ends the process at once, as kill -9 does: nothing is flushed,
// closed or answered.
func die(step, at string) {
	if step == at {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

type crashStore struct {
	records.Store
	at string
}

func (c *crashStore) ClaimWrite(ctx context.Context, w records.WriteClaim, now time.Time) (records.WriteClaimed, error) {
	claim, err := c.Store.ClaimWrite(ctx, w, now)
	if err == nil && claim.Key.State == records.KeyClaimed {
		die("ClaimWrite", c.at)
	}
	return claim, err
}

func (c *crashStore) CreateApproval(ctx context.Context, a records.Approval, notify bool) (records.Approval, bool, error) {
	a, created, err := c.Store.CreateApproval(ctx, a, notify)
	die("CreateApproval", c.at)
	return a, created, err
}

func (c *crashStore) CreateHandover(ctx context.Context, h records.Handover, notify bool) (records.Handover, bool, error) {
	h, created, err := c.Store.CreateHandover(ctx, h, notify)
	die("CreateHandover", c.at)
	return h, created, err
}

func (c *crashStore) Settle(ctx context.Context, st records.Settlement) error {
	err := c.Store.Settle(ctx, st)
	if st.Audit != nil {
		die("Settle", c.at)
	}
	return err
}

type crashERP struct {
	erp.Client
	at string
}

func (c *crashERP) PostInvoice(ctx context.Context, inv erp.Invoice, key string) (erp.Posting, error) {
	p, err := c.Client.PostInvoice(ctx, inv, key)
	die("PostInvoice", c.at)
	return p, err
}

// startCrashChild starts the gateway process and returns its base URL and
// a channel closed when it has exited.
func startCrashChild(t *testing.T, at string, args []string) (string, <-chan struct{}) {
	t.Helper()
	b, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(b), crashAtEnv+"="+at)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on") {
				lines <- sc.Text()
			}
		}
	}()
	select {
	case line := <-lines:
		m := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("start line %q", line)
		}
		return m[1], exited
	case <-exited:
		t.Fatalf("the gateway exited at start: %s", stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the gateway did not start: %s", stderr.String())
	}
	return "", nil
}

// TestKillBetweenSteps kills the gateway between any two steps of
// hand_over, request_approval and post_invoice, starts it again over the
// same records (SQLite file or PostgreSQL) and repeats the call with the
// same key: there is exactly one record or ERP posting, and the answer is
// the one the first call would have given.
func TestKillBetweenSteps(t *testing.T) {
	type write struct {
		name, path string
		body       map[string]any
		steps      []string
		check      func(t *testing.T, body map[string]any)
		count      func(t *testing.T, store records.Store, ledger sim.Ledger) int
		approved   bool // needs an approved approval for 5105600101 first
	}
	writes := []write{
		{name: "hand_over", path: "/handovers",
			body:  map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED", "summary": "PO 4500018830 item 10 is finally invoiced."},
			steps: []string{"ClaimWrite", "CreateHandover", "Settle"},
			check: func(t *testing.T, b map[string]any) {
				if b["handover_id"] != "HO0000001" || b["status"] != "queued" || b["queue"] != "procurement" {
					t.Errorf("answer %v, want HO0000001 queued for procurement", b)
				}
			},
			count: func(t *testing.T, s records.Store, _ sim.Ledger) int {
				list, err := s.ListHandovers(context.Background(), records.HandoverFilter{})
				if err != nil {
					t.Fatal(err)
				}
				return len(list)
			}},
		{name: "request_approval", path: "/invoices/5105600101/approvals",
			body:  map[string]any{"proposed_action": "post_as_invoiced", "justification": "Three-way match MATCHED on all lines."},
			steps: []string{"ClaimWrite", "CreateApproval", "Settle"},
			check: func(t *testing.T, b map[string]any) {
				if b["approval_id"] != "A0000001" || b["status"] != "approved" {
					t.Errorf("answer %v, want A0000001 approved", b)
				}
			},
			count: func(t *testing.T, s records.Store, _ sim.Ledger) int {
				list, err := s.ListApprovals(context.Background(), records.ApprovalFilter{})
				if err != nil {
					t.Fatal(err)
				}
				return len(list)
			}},
		{name: "post_invoice", path: "/invoices/5105600101/post", approved: true,
			body:  map[string]any{"approval_id": "A0000001"},
			steps: []string{"ClaimWrite", "PostInvoice", "Settle"},
			check: func(t *testing.T, b map[string]any) {
				if b["status"] != "posted" || b["already_posted"] != false {
					t.Errorf("answer %v, want posted by this call (already_posted false)", b)
				}
			},
			count: func(t *testing.T, _ records.Store, l sim.Ledger) int {
				n := 0
				for _, p := range l.Postings {
					if p.InvoiceID == "5105600101" {
						n++
					}
				}
				return n
			}},
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, w := range writes {
			for _, step := range w.steps {
				t.Run(engine+"/"+w.name+"/after_"+step, func(t *testing.T) {
					t.Parallel()
					simulator := sim.New(sim.Options{})
					erpSrv := httptest.NewServer(simulator)
					t.Cleanup(erpSrv.Close)
					args := []string{"-addr", "127.0.0.1:0", "-erp-url", erpSrv.URL, "-log-level", "error"}
					var url string
					if engine == "sqlite" {
						dir := t.TempDir()
						args = append(args, "-data-dir", dir)
						url = "sqlite:" + filepath.Join(dir, records.DataFile)
					} else {
						url = recordstest.PostgresURL(t)
						args = append(args, "-database-url", url)
					}
					store, err := records.Open(context.Background(), url, records.Options{})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { store.Close() })
					if w.approved {
						if _, _, err := store.CreateApproval(context.Background(), records.Approval{InvoiceID: "5105600101",
							FiscalYear: "2026", CompanyCode: "1010", Status: records.ApprovalApproved, Approver: erp.AutoApprover,
							ProposedAction: "post_as_invoiced", Justification: "Matched.", Amount: decimal.RequireFromString("1000.00"), Currency: "EUR",
							RequestedBy: "anonymous", DecidedBy: erp.AutoApprover}, false); err != nil {
							t.Fatal(err)
						}
					}

					first, exited := startCrashChild(t, step, args)
					if code, body, err := postJSON(first+w.path, w.body); err == nil {
						t.Fatalf("the gateway answered %d %s instead of dying after %s", code, body, step)
					}
					select {
					case <-exited:
					case <-time.After(10 * time.Second):
						t.Fatal("the gateway did not die")
					}

					again, _ := startCrashChild(t, "", args)
					code, body, err := postJSON(again+w.path, w.body)
					if err != nil || code != http.StatusOK {
						t.Fatalf("after the restart: %d %s %v", code, body, err)
					}
					var m map[string]any
					if err := json.Unmarshal(body, &m); err != nil {
						t.Fatal(err)
					}
					w.check(t, m)
					if n := w.count(t, store, simulator.Ledger()); n != 1 {
						t.Errorf("%d %s writes after the restart, want exactly 1", n, w.name)
					}
				})
			}
		}
	}
}

// postJSON POSTs body with the one idempotency key of the crash tests.
func postJSON(url string, body map[string]any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(b)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "crash-1")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
