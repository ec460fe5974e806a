package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry/quotatest"
)

// quotaConfig is what the quota command line asks for.
type quotaConfig struct {
	rate     float64       // -erp-rate of every gateway
	inFlight int           // -erp-in-flight of every gateway
	callers  int           // concurrent callers, each from a loopback address of its own
	length   time.Duration // one run
	redisURL string        // Redis the replicas share; "" starts a redis-server
	erpgate  string        // erpgate binary; "" builds one
}

// Defaults of the quota command line.
const (
	defaultQuotaRate    = 20
	defaultQuotaCallers = 200
	defaultQuotaLength  = 3 * time.Second
	quotaPOID           = "4500018822"
)

func parseQuota(args []string, stderr io.Writer) (quotaConfig, error) {
	fs := flag.NewFlagSet("loadbench quota", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg quotaConfig
	fs.Float64Var(&cfg.rate, "erp-rate", defaultQuotaRate, "the gateways' -erp-rate: most ERP calls per second toward each service")
	fs.IntVar(&cfg.inFlight, "erp-in-flight", 0, "the gateways' -erp-in-flight: most ERP calls at once toward each service (0: no ceiling)")
	fs.IntVar(&cfg.callers, "callers", defaultQuotaCallers, "concurrent callers, each one call after the other")
	fs.DurationVar(&cfg.length, "d", defaultQuotaLength, "length of each run")
	fs.StringVar(&cfg.redisURL, "redis-url", "", "Redis the two replicas share (default: a redis-server started on loopback)")
	fs.StringVar(&cfg.erpgate, "erpgate", "", "erpgate binary (default: built from this repository with go build)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return quotaConfig{}, err
		}
		return quotaConfig{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	var msg string
	switch {
	case fs.NArg() > 0:
		msg = fmt.Sprintf("unexpected arguments %q", fs.Args())
	case cfg.rate < 1:
		msg = "-erp-rate must be at least 1"
	case cfg.inFlight < 0:
		msg = "-erp-in-flight must not be negative"
	case cfg.callers < 1 || cfg.callers > 60000:
		msg = "-callers must be 1 to 60000"
	case cfg.length < time.Second || cfg.length > time.Minute:
		msg = "-d must be 1s to 1m"
	}
	if msg != "" {
		fmt.Fprintln(stderr, "loadbench quota:", msg)
		return quotaConfig{}, fmt.Errorf("%w: %s", errUsage, msg)
	}
	return cfg, nil
}

// quotaResult is what one run measured: the callers' answers and the
// requests the ERP saw.
type quotaResult struct {
	replicas int
	shared   string // "in process" or "redis"
	answered int
	refused  int // RATE_LIMITED for the ERP's quota, with retry_after_s
	other    map[string]int
	arrivals arrivals
	err      error
}

// arrivals are the times requests toward one service reached the ERP.
type arrivals []time.Time

// busiest returns the most arrivals in any 1 s window, wherever it
// starts (the busiest starts at an arrival), the total, and the time from
// the first to the last.
func (a arrivals) busiest() (most, total int, span time.Duration) {
	if len(a) > 1 {
		span = slices.MaxFunc(a, time.Time.Compare).Sub(slices.MinFunc(a, time.Time.Compare))
	}
	return quotatest.Busiest(a, time.Second), len(a), span
}

// runQuota measures the ERP's quota from outside: one erpgate process, and
// two replicas sharing a Redis, each with -erp-rate, in front of a
// simulated ERP in the bench that notes when each request arrives; the
// callers read a purchase order through them for -d, each from a loopback
// address of its own (so that the per-client limit, which -erp-rate needs
// beside it, is each caller's), and a caller refused waits retry_after_s
// as an agent does. It prints the busiest 1 s window of arrivals at the
// ERP against the ceiling.
func runQuota(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseQuota(args, stderr)
	if err != nil {
		return err
	}
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, "loadbench: "+format+"\n", a...) }
	raiseOpenFiles()
	dir, err := os.MkdirTemp("", "loadbench-quota-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := erpgateBinary(ctx, cfg.erpgate, dir, progress)
	if err != nil {
		return err
	}
	redisURL := cfg.redisURL
	if redisURL == "" {
		rs, url, err := startRedis(ctx, dir)
		if err != nil {
			progress("two replicas left out: %v", err)
		} else {
			defer rs.stop()
			redisURL = url
		}
	}
	var results []quotaResult
	for _, replicas := range []int{1, 2} {
		if replicas > 1 && redisURL == "" {
			continue
		}
		progress("%d gateway(s), -erp-rate %g, %d callers for %v", replicas, cfg.rate, cfg.callers, cfg.length)
		res := quotaRun(ctx, cfg, bin, dir, replicas, redisURL)
		if res.err != nil {
			return res.err
		}
		results = append(results, res)
	}
	printQuota(stdout, cfg, results)
	return ctx.Err()
}

// quotaRun is one run with replicas gateways (sharing redisURL when more
// than one).
func quotaRun(ctx context.Context, cfg quotaConfig, bin, dir string, replicas int, redisURL string) quotaResult {
	res := quotaResult{replicas: replicas, shared: "in process", other: map[string]int{}}
	s := sim.New(sim.Options{RecordCalls: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		res.err = err
		return res
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown below
	defer srv.Shutdown(context.Background())
	erpURL := "http://" + ln.Addr().String()

	// Each caller is a client of its own, whose limit is the ceiling: the
	// most -erp-rate allows beside it.
	flags := []string{"-erp-rate", strconv.FormatFloat(cfg.rate, 'g', -1, 64), "-erp-in-flight", strconv.Itoa(cfg.inFlight),
		"-rate-limit", strconv.Itoa(int(cfg.rate)), "-rate-window", "1s"}
	if replicas > 1 {
		res.shared = "redis"
		flags = append(flags, "-redis-url", redisURL)
	}
	var urls []string
	for i := range replicas {
		gw, err := startErpgate(bin, erpURL, dir, fmt.Sprintf("erpgate-quota-%d-%d", replicas, i+1), false, flags...)
		if err != nil {
			res.err = err
			return res
		}
		defer gw.stop()
		urls = append(urls, gw.url)
	}
	s.ResetCalls()

	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	end := time.Now().Add(cfg.length)
	for i := range cfg.callers {
		// 127.1.0.1, 127.1.0.2, ...: loopback, each caller its own source.
		local := &net.TCPAddr{IP: net.IPv4(127, 1, byte((i+1)>>8), byte((i+1)&0xff))}
		tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 1}
		client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		url := urls[i%len(urls)] + "/purchase-orders/" + quotaPOID
		wg.Go(func() {
			defer tr.CloseIdleConnections()
			for time.Now().Before(end) && ctx.Err() == nil {
				kind, wait := quotaCall(ctx, client, url)
				mu.Lock()
				switch kind {
				case "ok":
					res.answered++
				case "erp_quota":
					res.refused++
				default:
					res.other[kind]++
				}
				mu.Unlock()
				if wait > 0 {
					time.Sleep(min(wait, time.Until(end)))
				}
			}
		})
	}
	wg.Wait()
	for _, c := range s.Calls() {
		if c.Service == erp.ServicePurchaseOrder {
			res.arrivals = append(res.arrivals, c.Start)
		}
	}
	return res
}

// quotaCall reads url once: "ok", "erp_quota" for a refusal at the ERP's
// quota with retry_after_s (and that wait), or what else it was.
func quotaCall(ctx context.Context, client *http.Client, url string) (kind string, wait time.Duration) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "error", 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return "no answer", 100 * time.Millisecond
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return "ok", 0
	}
	var e struct {
		Code    string `json:"code"`
		Details struct {
			Reason     string  `json:"reason"`
			RetryAfter float64 `json:"retry_after_s"`
		} `json:"details"`
	}
	_ = json.Unmarshal(body, &e)
	if resp.StatusCode == http.StatusTooManyRequests && e.Code == "RATE_LIMITED" && e.Details.Reason == "erp_quota" &&
		e.Details.RetryAfter > 0 {
		return "erp_quota", time.Duration(e.Details.RetryAfter * float64(time.Second))
	}
	kind = strconv.Itoa(resp.StatusCode)
	if e.Code != "" {
		kind += " " + e.Code
		if e.Details.Reason != "" {
			kind += " (" + e.Details.Reason + ")"
		}
	}
	return kind, 100 * time.Millisecond
}

// startRedis starts redis-server on a free loopback port, without
// persistence, and returns it with its URL.
func startRedis(ctx context.Context, dir string) (*child, string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", errors.New("no redis-server on the PATH (apt-get install redis-server), and no -redis-url")
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	_, port, _ := net.SplitHostPort(addr)
	c, err := startChild("redis-server", exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"),
		dir+"/redis.log")
	if err != nil {
		return nil, "", err
	}
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	for range 100 {
		if rc.Ping(ctx).Err() == nil {
			return c, "redis://" + addr + "/0", nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.stop()
	return nil, "", fmt.Errorf("redis-server on %s did not answer", addr)
}

// printQuota prints a row per run and the goal: no 1 s window at the ERP
// holds more than the ceiling.
func printQuota(w io.Writer, cfg quotaConfig, results []quotaResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "gateways\tquota\tceiling\tcallers\tanswered\terp_quota-429\tother\tERP-requests\tERP-span\tERP-rate\tbusiest-1s\t")
	ceiling := int(cfg.rate)
	verdict := "PASS"
	var worst []string
	for _, r := range results {
		most, total, span := r.arrivals.busiest()
		rate := "-"
		if span > 0 {
			rate = fmt.Sprintf("%.1f/s", float64(total-1)/span.Seconds())
		}
		other := "0"
		if len(r.other) > 0 {
			other = fmt.Sprint(r.other)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d/s\t%d\t%d\t%d\t%s\t%d\t%v\t%s\t%d\t\n", r.replicas, r.shared, ceiling, cfg.callers,
			r.answered, r.refused, other, total, span.Round(time.Millisecond), rate, most)
		worst = append(worst, fmt.Sprintf("%d (%s)", most, r.shared))
		if most > ceiling || r.refused == 0 || len(r.other) > 0 {
			verdict = "MISS"
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "goal\tbusiest 1 s window at the ERP <= %d, refusals RATE_LIMITED erp_quota with retry_after_s\t%s\t%s\t\n",
		ceiling, strings.Join(worst, ", "), verdict)
	tw.Flush()
}
