package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/erpgate/erpgate/erp"
)

// FaultKind is what an injected fault does to a request.
type FaultKind string

// The fault kinds.
const (
	// FaultStatus answers with Status and an error envelope; 429 and 503
	// carry Retry-After.
	FaultStatus FaultKind = "status"
	// FaultHTML500 answers 500 with an HTML page, as a proxy in front of
	// the gateway does.
	FaultHTML500 FaultKind = "html500"
	// FaultMalformed answers 200 with a truncated JSON body.
	FaultMalformed FaultKind = "malformed"
	// FaultReset closes the connection without an answer.
	FaultReset FaultKind = "reset"
	// FaultHang waits DelayMS, or until the client goes away, and then
	// serves the request normally.
	FaultHang FaultKind = "hang"
	// FaultLost serves the request, applying any write, and then closes the
	// connection so the client never sees the answer.
	FaultLost FaultKind = "lost"
)

// AnyService makes a fault rule match requests to every service.
const AnyService erp.Service = "*"

// DefaultHangDelay is how long a hang fault waits when DelayMS is zero.
const DefaultHangDelay = 30 * time.Second

// FaultRule injects a fault into OData requests to Service. Admin requests
// are never affected, nor are CSRF fetches and $metadata reads (GET of a
// service root or of its $metadata) unless IncludeFetch is set. Method and Path narrow the requests the rule
// matches.
//
// A rule works in one of three modes:
//
//   - Next (neither Probability nor Schedule set): the rule affects the
//     next Count matching requests; Count zero means one, a negative Count
//     every matching request until the faults are cleared.
//   - Probability: the rule affects each matching request with probability
//     Probability, drawn from the server's seeded generator (see
//     Options.Seed). Count limits how many requests it affects in total;
//     zero or negative means no limit.
//   - Schedule: the rule follows Schedule over successive matching
//     requests, repeating it. Count limits the total as in probability
//     mode; zero or negative means no limit.
//
// Rules are tried in the order they were added; the first that injects a
// fault wins, and the rules after it do not see the request. A rule whose
// Count is used up is removed.
type FaultRule struct {
	// Service is the erp.Service to affect, or AnyService ("*"); empty
	// means AnyService.
	Service erp.Service `json:"service"`
	// Kind is the fault to inject; empty with a non-zero Status means
	// FaultStatus.
	Kind FaultKind `json:"kind"`
	// Method limits the rule to requests with this HTTP method, matched
	// without regard to case: "POST" affects only writes, "GET" only reads
	// (HEAD is a method of its own). Empty matches every method.
	Method string `json:"method,omitempty"`
	// Path limits the rule to requests whose path after the service root
	// contains it, such as "Release", "A_SupplierInvoice" or "A_PurchaseOrder";
	// the match is case-sensitive and ignores the query. Empty matches
	// every path.
	Path string `json:"path,omitempty"`
	// Status is the HTTP status (400-599) for FaultStatus; zero means 503.
	Status int `json:"status,omitempty"`
	// RetryAfterS is the Retry-After delay in seconds. A 429 always
	// carries Retry-After (zero sends 1); other statuses carry it when
	// RetryAfterS is positive or RetryAfterDate is set.
	RetryAfterS int `json:"retry_after_s,omitempty"`
	// RetryAfterDate sends Retry-After as an HTTP-date, the server's clock
	// (Options.Now) plus RetryAfterS seconds, at least one, instead of a
	// number of seconds; it makes every status carry the header.
	RetryAfterDate bool `json:"retry_after_date,omitempty"`
	// Count bounds how many requests the rule affects; its meaning depends
	// on the mode, as described on FaultRule.
	Count int `json:"count,omitempty"`
	// Probability, when positive, puts the rule in probability mode: each
	// matching request is affected with this probability, which must be at
	// most 1.
	Probability float64 `json:"probability,omitempty"`
	// Schedule, when set, puts the rule in schedule mode: a pattern of 'x'
	// (inject) and '.' (pass) applied to successive matching requests and
	// repeated, so "..x" affects every third one. It needs at least one
	// 'x' and excludes Probability.
	Schedule string `json:"schedule,omitempty"`
	// DelayMS is how long FaultHang waits; zero means DefaultHangDelay.
	// For the other kinds it is how long the fault takes before it
	// answers (or drops the connection), as an ERP that fails slowly does;
	// zero answers at once.
	DelayMS int `json:"delay_ms,omitempty"`
	// IncludeFetch lets the rule affect CSRF token fetches and $metadata
	// reads too.
	IncludeFetch bool `json:"include_fetch,omitempty"`
}

// FaultStat is a fault rule in force with what it has done so far.
type FaultStat struct {
	FaultRule
	// Matched is how many requests matched the rule, whether or not it
	// affected them.
	Matched int `json:"matched"`
	// Injected is how many requests the rule affected.
	Injected int `json:"injected"`
}

// faultMethods are the methods a rule may name; anything else is a typo.
var faultMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, "MERGE", http.MethodDelete, http.MethodOptions,
}

// faultServices are the service names a rule may name: AnyService and
// the services the simulator publishes.
var faultServices = []erp.Service{
	AnyService, erp.ServiceSupplierInvoice, erp.ServicePurchaseOrder,
	erp.ServiceMaterialDocument, erp.ServiceBusinessPartner,
}

var faultKinds = []FaultKind{FaultStatus, FaultHTML500, FaultMalformed, FaultReset, FaultHang, FaultLost}

// normalized fills in the defaults a rule's zero fields stand for.
func (f FaultRule) normalized() FaultRule {
	if f.Service == "" {
		f.Service = AnyService
	}
	if f.Kind == "" && f.Status != 0 {
		f.Kind = FaultStatus
	}
	if f.Kind == FaultStatus && f.Status == 0 {
		f.Status = http.StatusServiceUnavailable
	}
	f.Method = strings.ToUpper(f.Method)
	return f
}

func (f FaultRule) validate() error {
	if err := f.normalized().check(); err != nil {
		return fmt.Errorf("sim: fault rule: %w", err)
	}
	return nil
}

// check reports what is wrong with a normalized rule.
func (f FaultRule) check() error {
	if !slices.Contains(faultServices, f.Service) {
		return fmt.Errorf("unknown service %q (want one of %s)", f.Service, joinQuoted(faultServices))
	}
	if !slices.Contains(faultKinds, f.Kind) {
		return fmt.Errorf("unknown fault kind %q (want one of %s)", f.Kind, joinQuoted(faultKinds))
	}
	if f.Kind == FaultStatus && (f.Status < 400 || f.Status > 599) {
		return fmt.Errorf("invalid status %d (want 400-599)", f.Status)
	}
	if f.Method != "" && !slices.Contains(faultMethods, f.Method) {
		return fmt.Errorf("unknown method %q (want one of %s)", f.Method, joinQuoted(faultMethods))
	}
	if f.DelayMS < 0 || f.RetryAfterS < 0 {
		return errors.New("negative delay_ms or retry_after_s")
	}
	if math.IsNaN(f.Probability) || f.Probability < 0 || f.Probability > 1 {
		return fmt.Errorf("invalid probability %v (want 0 < p <= 1)", f.Probability)
	}
	if f.Schedule != "" {
		if f.Probability > 0 {
			return errors.New("probability and schedule exclude each other")
		}
		if strings.Trim(f.Schedule, "x.") != "" {
			return fmt.Errorf("invalid schedule %q (want only 'x' to inject and '.' to pass)", f.Schedule)
		}
		if !strings.Contains(f.Schedule, "x") {
			return fmt.Errorf("schedule %q never injects (want at least one 'x')", f.Schedule)
		}
	}
	return nil
}

func joinQuoted[T ~string](vs []T) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(string(v))
	}
	return strings.Join(q, ", ")
}

// ParseFaults parses fault rules from their text form, as the erpsim
// command takes them in -faults and ERPSIM_FAULTS. An empty spec gives no
// rules. The grammar is
//
//	spec  = [ rule *( ";" rule ) ]
//	rule  = service ":" param *( "," param )
//	param = key [ "=" value ]
//
// where service is a service name such as purchase_order or "*" for every
// service, and key is one of the FaultRule fields by its JSON name: kind,
// status, retry_after_s, retry_after_date, count, delay_ms, probability
// (or p), schedule, method, path and include_fetch. The boolean keys
// retry_after_date and include_fetch may stand alone to mean true; every
// other key needs a value. Keys are case-insensitive, blanks around rules,
// keys and values are ignored, and empty rules and params are skipped. A
// status without a kind implies kind=status, and a status with any other
// kind is an error, as are unknown or repeated keys. For example:
//
//	purchase_order:status=503,p=0.3;supplier_invoice:kind=lost,method=POST,path=Release,count=1;*:kind=hang,delay_ms=5000,schedule=..x
//
// Values cannot contain ',' or ';'.
func ParseFaults(spec string) ([]FaultRule, error) {
	var rules []FaultRule
	for i, text := range strings.Split(spec, ";") {
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		rule, err := parseFault(text)
		if err != nil {
			return nil, fmt.Errorf("sim: fault rule %d %q: %w", i+1, text, err)
		}
		rules = append(rules, rule)
	}
	return rules, nil
}

func parseFault(text string) (FaultRule, error) {
	name, params, ok := strings.Cut(text, ":")
	if !ok {
		return FaultRule{}, errors.New(`want "service:key=value,..."`)
	}
	rule := FaultRule{Service: erp.Service(strings.TrimSpace(name))}
	if rule.Service == "" {
		return FaultRule{}, errors.New(`empty service (use "*" for every service)`)
	}
	seen := map[string]bool{}
	for _, param := range strings.Split(params, ",") {
		param = strings.TrimSpace(param)
		if param == "" {
			continue
		}
		key, value, hasValue := strings.Cut(param, "=")
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
		if key == "p" {
			key = "probability"
		}
		if seen[key] {
			return FaultRule{}, fmt.Errorf("repeated key %q", key)
		}
		seen[key] = true
		var err error
		switch key {
		case "retry_after_date", "include_fetch":
			b := true
			if hasValue {
				if b, err = strconv.ParseBool(value); err != nil {
					return FaultRule{}, fmt.Errorf("invalid %s %q (want true or false)", key, value)
				}
			}
			if key == "include_fetch" {
				rule.IncludeFetch = b
			} else {
				rule.RetryAfterDate = b
			}
			continue
		case "kind", "status", "retry_after_s", "count", "delay_ms", "probability", "schedule", "method", "path":
		default:
			return FaultRule{}, fmt.Errorf("unknown key %q (want kind, status, retry_after_s, retry_after_date, count, delay_ms, p or probability, schedule, method, path or include_fetch)", key)
		}
		if value == "" {
			return FaultRule{}, fmt.Errorf("key %q needs a value", key)
		}
		switch key {
		case "kind":
			rule.Kind = FaultKind(strings.ToLower(value))
		case "status":
			rule.Status, err = parseInt(key, value)
		case "retry_after_s":
			rule.RetryAfterS, err = parseInt(key, value)
		case "count":
			rule.Count, err = parseInt(key, value)
		case "delay_ms":
			rule.DelayMS, err = parseInt(key, value)
		case "probability":
			rule.Probability, err = strconv.ParseFloat(value, 64)
			if err != nil || !(rule.Probability > 0 && rule.Probability <= 1) {
				err = fmt.Errorf("invalid probability %q (want 0 < p <= 1)", value)
			}
		case "schedule":
			rule.Schedule = value
		case "method":
			rule.Method = value
		case "path":
			rule.Path = value
		}
		if err != nil {
			return FaultRule{}, err
		}
	}
	switch {
	case rule.Kind == "" && !seen["status"]:
		return FaultRule{}, errors.New("no kind (want kind=... or status=NNN)")
	case seen["status"] && rule.Kind != "" && rule.Kind != FaultStatus:
		return FaultRule{}, fmt.Errorf("status goes with kind=status, not kind=%s", rule.Kind)
	}
	if err := rule.normalized().check(); err != nil {
		return FaultRule{}, err
	}
	return rule, nil
}

func parseInt(key, value string) (int, error) {
	n, err := strconv.Atoi(value)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q (want an integer)", key, value)
	}
	return n, nil
}

// activeFault is a rule in force with what it has done so far.
type activeFault struct {
	rule     FaultRule
	left     int // injections left; < 0 means no limit
	matched  int
	injected int
	// rng is the generator every rule in force shares; see shareRand.
	rng *rand.Rand
}

func newActiveFault(rule FaultRule) *activeFault {
	rule = rule.normalized()
	left := rule.Count
	switch {
	case left < 0:
		left = -1
	case left == 0 && rule.Probability == 0 && rule.Schedule == "":
		left = 1
	case left == 0:
		left = -1
	}
	return &activeFault{rule: rule, left: left}
}

// applies reports whether the rule covers requests to svc, leaving method
// and path aside.
func (f *activeFault) applies(svc erp.Service, fetch bool) bool {
	return (f.rule.Service == AnyService || f.rule.Service == svc) && (!fetch || f.rule.IncludeFetch)
}

func (f *activeFault) matches(svc erp.Service, method, sub string, fetch bool) bool {
	return f.applies(svc, fetch) &&
		(f.rule.Method == "" || strings.EqualFold(f.rule.Method, method)) &&
		strings.Contains(sub, f.rule.Path)
}

// fire counts a matching request and reports whether the rule affects it.
func (f *activeFault) fire() bool {
	f.matched++
	switch {
	case f.rule.Probability > 0:
		if f.rng.Float64() >= f.rule.Probability {
			return false
		}
	case f.rule.Schedule != "":
		if f.rule.Schedule[(f.matched-1)%len(f.rule.Schedule)] != 'x' {
			return false
		}
	}
	f.injected++
	if f.left > 0 {
		f.left--
	}
	return true
}

// shareRand gives every rule in force the same generator, starting one
// from the seed when none has it: the rules added at New and those added
// later draw from one sequence, and the sequence restarts whenever no rule
// is left. The caller holds s.mu.
func (s *Server) shareRand() {
	var rng *rand.Rand
	for _, f := range s.faults {
		if f.rng != nil {
			rng = f.rng
			break
		}
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(s.opts.Seed, s.opts.Seed))
	}
	for _, f := range s.faults {
		f.rng = rng
	}
}

// InjectFault adds a fault rule after the ones already in force.
func (s *Server) InjectFault(rule FaultRule) error {
	return s.InjectFaults(rule)
}

// InjectFaults adds fault rules, in order, after the ones already in
// force. When one of them is invalid it adds none.
func (s *Server) InjectFaults(rules ...FaultRule) error {
	for i, rule := range rules {
		if err := rule.validate(); err != nil {
			if len(rules) > 1 {
				return fmt.Errorf("rule %d: %w", i+1, err)
			}
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rule := range rules {
		s.faults = append(s.faults, newActiveFault(rule))
	}
	s.shareRand()
	return nil
}

// ClearFaults removes every fault rule.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Faults returns the rules in force with their defaults filled in and
// Count set to the number of requests each may still affect, -1 for no
// limit; FaultStats adds what each has done.
func (s *Server) Faults() []FaultRule {
	stats := s.FaultStats()
	out := make([]FaultRule, len(stats))
	for i, st := range stats {
		out[i] = st.FaultRule
	}
	return out
}

// FaultStats returns the rules in force as Faults does, each with how many
// requests matched it and how many it affected. GET /sim/admin/faults
// answers {"faults": FaultStats()}.
func (s *Server) FaultStats() []FaultStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FaultStat, 0, len(s.faults))
	for _, f := range s.faults {
		r := f.rule
		r.Count = f.left
		out = append(out, FaultStat{FaultRule: r, Matched: f.matched, Injected: f.injected})
	}
	return out
}

// matchFault picks the rule that affects a request with method to the
// path sub of svc, counting the request against the rules it matches.
func (s *Server) matchFault(svc erp.Service, method, sub string, fetch bool) (FaultRule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.matchFaultLocked(svc, method, sub, fetch)
}

func (s *Server) matchFaultLocked(svc erp.Service, method, sub string, fetch bool) (FaultRule, bool) {
	s.shareRand()
	for i, f := range s.faults {
		if !f.matches(svc, method, sub, fetch) || !f.fire() {
			continue
		}
		if f.left == 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return f.rule, true
	}
	return FaultRule{}, false
}

// injectFault applies rule to the request and reports whether it answered
// (or dropped) it; false means the request is to be served normally.
func (s *Server) injectFault(w http.ResponseWriter, r *http.Request, svc *service, sub string, rule FaultRule) bool {
	if rule.Kind != FaultHang && rule.DelayMS > 0 {
		t := time.NewTimer(time.Duration(rule.DelayMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			dropConnection(w, false)
			return true
		}
	}
	switch rule.Kind {
	case FaultStatus:
		resp := s.errorResponse(svc, statusFault(rule.Status))
		if v := s.retryAfter(rule); v != "" {
			resp.header.Set("Retry-After", v)
		}
		resp.write(w)
	case FaultHTML500:
		textResponse(http.StatusInternalServerError, "text/html; charset=utf-8",
			"<html><body><h1>500</h1>Connection timed out</body></html>").write(w)
	case FaultMalformed:
		textResponse(http.StatusOK, "application/json; charset=utf-8",
			`{"d":{"results":[{"__metadata":{"id":"`+servicePrefix+svc.name+`/`).write(w)
	case FaultReset:
		dropConnection(w, true)
	case FaultHang:
		// Read the body first: only then does the server notice a client
		// that gives up, so a write that timed out is not applied later.
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			dropConnection(w, false)
			return true
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		delay := DefaultHangDelay
		if rule.DelayMS > 0 {
			delay = time.Duration(rule.DelayMS) * time.Millisecond
		}
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
			return false
		case <-r.Context().Done():
			// The client left or the server is shutting down: an empty 200
			// would look like an answer, so drop the connection instead.
			dropConnection(w, false)
			return true
		}
	case FaultLost:
		s.odata(r, svc, sub)
		dropConnection(w, false)
	default:
		return false
	}
	return true
}

// retryAfter is the Retry-After value a status fault carries, or "" for
// none.
func (s *Server) retryAfter(rule FaultRule) string {
	switch {
	case rule.RetryAfterDate:
		delay := time.Duration(max(rule.RetryAfterS, 1)) * time.Second
		return s.opts.Now().Add(delay).UTC().Format(http.TimeFormat)
	case rule.Status == http.StatusTooManyRequests:
		return strconv.Itoa(max(rule.RetryAfterS, 1))
	case rule.RetryAfterS > 0:
		return strconv.Itoa(rule.RetryAfterS)
	}
	return ""
}

// statusFault is the envelope an injected status comes with.
func statusFault(status int) *apiError {
	switch {
	case status == http.StatusTooManyRequests:
		return newError(status, "/IWFND/CM_CONSUMER/429", "Too many requests; the request limit of the service has been reached")
	case status >= 500:
		return newError(status, "/IWFND/CM_BEC/026",
			fmt.Sprintf("SAP backend system is not available (%d %s)", status, http.StatusText(status)))
	default:
		return newError(status, fmt.Sprintf("/IWFND/CM_CONSUMER/%03d", status), http.StatusText(status))
	}
}

// dropConnection closes the client's connection without an answer; reset
// makes the close abortive so the client sees "connection reset by peer".
func dropConnection(w http.ResponseWriter, reset bool) {
	if sw, ok := w.(*statusWriter); ok {
		sw.drop()
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Connections that cannot be hijacked (HTTP/2) are aborted by the
		// server when the handler panics with this sentinel.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
