package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/erpgate/erpgate/erp/sim"
)

// The memory part of the writes bench: erpgate's memory, as a process of
// its own, after many distinct run ids and idempotency keys.

// Defaults of the memory part.
const (
	defaultMemRuns = 100000
	// defaultMemKeys is twice -max-keys-per-client: the first half fills
	// the client's cap, the second is refused by it. Past the cap every
	// keyed call still costs a count of the client's live keys, some
	// milliseconds on two cores, so 100,000 keys take minutes (-keys
	// 100000).
	defaultMemKeys = 2 * keysPerClient
	defaultMemConc = 64
	// flatBound is what the second half of a kind's ids may add to the
	// live heap, after a GC, for the memory to count as flat: it does not
	// grow with the number of ids.
	flatBound = 4 << 20
	// keysPerClient is erpgate's -max-keys-per-client default, which the
	// bench leaves as it is.
	keysPerClient = 10000
)

// memPoint is erpgate's memory at one moment: resident, and the Go heap
// after a forced GC.
type memPoint struct {
	rss, rssGC, heapGC int64
}

// idPhase is one kind of distinct ids sent to erpgate.
type idPhase struct {
	name        string // "run ids" or "idempotency keys"
	call        string // what each call is
	ids         int
	statuses    map[int]int
	halves      [2]time.Duration // the time of each half's calls
	start       memPoint         // before the phase's first call
	half, after memPoint
}

// idMemory is what the memory part found.
type idMemory struct {
	conc    int
	records string // the engine of erpgate's records
	before  memPoint
	phases  []*idPhase
}

// measureIDMemory starts erpgate (with its production defaults and a
// profiles port, through which it is made to collect its garbage) in
// front of a simulated ERP in this process, and sends it the run ids, then
// the idempotency keys, reading its memory before, half way through and
// after each.
func measureIDMemory(ctx context.Context, cfg writesConfig, dir, databaseURL string, progress func(string, ...any)) (*idMemory, error) {
	raiseOpenFiles()
	s := sim.New(sim.Options{})
	erpURL, shutdown, err := s.Start("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer shutdown(context.Background()) //nolint:errcheck // the bench is over
	bin, err := erpgateBinary(ctx, cfg.erpgate, dir, progress)
	if err != nil {
		return nil, err
	}
	// Every run id of the bench reads the same invoice: the invoice's cap
	// across runs, which would stop such a chain, is lifted so that each
	// id is a run the gateway keeps.
	extra := []string{"-invoice-runs", strconv.Itoa(math.MaxInt32), "-invoice-calls", strconv.Itoa(math.MaxInt32)}
	m := &idMemory{conc: cfg.memConc, records: "SQLite"}
	if databaseURL != "" {
		extra = append(extra, "-database-url", databaseURL)
		m.records = "PostgreSQL"
	}
	gw, err := startErpgate(bin, erpURL, dir, "erpgate-memory", true, extra...)
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	var debugURL string
	select {
	case debugURL = <-gw.profiles:
	case <-time.After(5 * time.Second):
		return nil, errors.New("erpgate printed no profiles address")
	}
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.memConc, MaxIdleConns: cfg.memConc}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	read := func() (memPoint, error) {
		var p memPoint
		var err error
		if p.rss, err = rss(gw.pid()); err != nil {
			return p, err
		}
		if p.heapGC, err = heapAfterGC(ctx, client, debugURL); err != nil {
			return p, err
		}
		p.rssGC, err = rss(gw.pid())
		return p, err
	}
	// Warm up: the connections, the ERP client, the store's pools.
	warm := &idPhase{name: "warm-up", statuses: map[int]int{}}
	sendIDs(ctx, client, gw.url, warm, "warm", min(2000, max(cfg.runs, cfg.keys)), cfg.memConc, false)
	if m.before, err = read(); err != nil {
		return nil, err
	}
	for _, ph := range []*idPhase{
		{name: "run ids", call: "get_invoice, X-Run-Id of its own", ids: cfg.runs, statuses: map[int]int{}},
		{name: "idempotency keys", call: "hand_over, Idempotency-Key of its own", ids: cfg.keys, statuses: map[int]int{}},
	} {
		if ph.ids == 0 {
			continue
		}
		progress("memory: %d distinct %s, %d callers", ph.ids, ph.name, cfg.memConc)
		keyed := ph.name == "idempotency keys"
		ph.start = m.before
		if n := len(m.phases); n > 0 {
			ph.start = m.phases[n-1].after
		}
		start := time.Now()
		sendIDs(ctx, client, gw.url, ph, "mem-a", ph.ids/2, cfg.memConc, keyed)
		ph.halves[0] = time.Since(start)
		if ph.half, err = read(); err != nil {
			return nil, err
		}
		start = time.Now()
		sendIDs(ctx, client, gw.url, ph, "mem-b", ph.ids-ph.ids/2, cfg.memConc, keyed)
		ph.halves[1] = time.Since(start)
		if ph.after, err = read(); err != nil {
			return nil, err
		}
		m.phases = append(m.phases, ph)
	}
	return m, ctx.Err()
}

// sendIDs makes n calls from conc callers, each with an id of its own
// (prefix and a number): get_invoice with the id as X-Run-Id, or, keyed,
// hand_over with the id as Idempotency-Key. It counts the answers by
// status; a call that got no answer counts under 0.
func sendIDs(ctx context.Context, client *http.Client, base string, ph *idPhase, prefix string, n, conc int, keyed bool) {
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				id := fmt.Sprintf("%s-%d", prefix, i)
				var req *http.Request
				if keyed {
					body := `{"invoice_id":"5105600103","code":"PO_NOT_FOUND","summary":"Invoice references PO 4500019822, which does not exist."}`
					req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/handovers", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Idempotency-Key", id)
				} else {
					req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/invoices/5105600101", nil)
					req.Header.Set("X-Run-Id", id)
				}
				status := 0
				if resp, err := client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = resp.StatusCode
				}
				mu.Lock()
				ph.statuses[status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// heapAfterGC has erpgate collect its garbage (net/http/pprof's heap
// profile with gc=1) and returns its HeapAlloc after it, which the
// profile's text form ends with.
func heapAfterGC(ctx context.Context, client *http.Client, debugURL string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, debugURL+"/debug/pprof/heap?gc=1&debug=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, len(body)+1)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no HeapAlloc in erpgate's heap profile (%s)", resp.Status)
}

// before is erpgate's memory before the phase's first call.
func (ph *idPhase) before() memPoint { return ph.start }

// growth is what the second half of a phase's ids added to the live heap.
func (ph *idPhase) growth() int64 { return ph.after.heapGC - ph.half.heapGC }

// flat reports whether the second half of the ids left the live heap
// within flatBound.
func (ph *idPhase) flat() bool { return ph.growth() <= flatBound }

// answered is the count of calls answered 2xx.
func (ph *idPhase) answered() int {
	n := 0
	for st, c := range ph.statuses {
		if st >= 200 && st <= 299 {
			n += c
		}
	}
	return n
}

func (ph *idPhase) statusList() string {
	var parts []string
	for _, st := range []int{0, 200, 201, 409, 429, 500, 502, 503} {
		if c := ph.statuses[st]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d: %d", st, c))
		}
	}
	other := 0
	for st, c := range ph.statuses {
		if !strings.Contains(" 0 200 201 409 429 500 502 503 ", " "+strconv.Itoa(st)+" ") {
			other += c
		}
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("other: %d", other))
	}
	return strings.Join(parts, ", ")
}

// print prints the memory table and its goal lines.
func (m *idMemory) print(w io.Writer) {
	fmt.Fprintf(w, "memory: erpgate as a process (%s records, run state in memory, -max-keys-per-client %d, -run-ttl 24h), %d callers on loopback\n",
		m.records, keysPerClient, m.conc)
	fmt.Fprintf(w, "heap = Go heap in use after a forced GC (pprof heap?gc=1); flat = the second half of the ids adds at most %s to it\n\n", mib(flatBound))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ids\tcalls\tanswers\ttime (halves)\tRSS before\tRSS after\tRSS after GC\theap before\theap at half\theap after\tsecond half adds\tper id\tflat")
	for _, ph := range m.phases {
		prev := ph.before()
		perID := float64(ph.after.heapGC-prev.heapGC) / float64(ph.ids)
		fmt.Fprintf(tw, "%d %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f B\t%s\n", ph.ids, ph.name, ph.call,
			ph.statusList(), ph.halves[0].Round(100*time.Millisecond).String()+" + "+ph.halves[1].Round(100*time.Millisecond).String(), mib(prev.rss), mib(ph.after.rss), mib(ph.after.rssGC),
			mib(prev.heapGC), mib(ph.half.heapGC), mib(ph.after.heapGC), signedMiB(ph.growth()), perID, verdict(ph.flat()))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, ph := range m.phases {
		goal(tw, fmt.Sprintf("memory flat after %d distinct %s (second half adds <= %s of heap)", ph.ids, ph.name, mib(flatBound)),
			signedMiB(ph.growth()), verdict(ph.flat()))
	}
	tw.Flush()
}

func signedMiB(n int64) string {
	if n >= 0 {
		return "+" + mib(n)
	}
	return "-" + mib(-n)
}
