package api

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestHeaderIDPatternIsTheContracts holds the hand-written id check to the
// contract's pattern for ids of every length and alphabet around its edges.
func TestHeaderIDPatternIsTheContracts(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
	cases := []string{"", "a", "run-42", "A.b_c:d-e", strings.Repeat("x", 128), strings.Repeat("x", 129),
		"a b", "a/b", "a\n", "ü", "a\x00", "%41", "a+b", "a,b"}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "azAZ09._:-/ \x00\x7f\xff+,;=é"
	for range 5000 {
		b := make([]byte, rng.IntN(135))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(4) > 0 {
				b[i] = "abcXYZ019._:-"[rng.IntN(13)]
			}
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := headerIDPattern.MatchString(s), re.MatchString(s); got != want {
			t.Fatalf("%q: %v, the contract's pattern says %v", s, got, want)
		}
	}
}

// TestSuccessHeaderStaysShared holds setHeader to changing the response it
// is called on only: the header success bodies share keeps its two.
func TestSuccessHeaderStaysShared(t *testing.T) {
	s := &Server{}
	a, b := s.success(nil, map[string]string{}, nil), s.success(nil, map[string]string{}, nil)
	a.setHeader("X-Run-Id", "run-1")
	if got := a.header.Get("X-Run-Id"); got != "run-1" {
		t.Errorf("X-Run-Id: got %q, want run-1", got)
	}
	if got := a.header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type after setHeader: got %q, want application/json", got)
	}
	if len(successHeader) != 2 || len(b.header) != 2 || b.header.Get("X-Run-Id") != "" {
		t.Errorf("shared header changed: %v, other response %v", successHeader, b.header)
	}
}

// TestDigitsIsTheContracts holds the hand-written check of invoice and
// purchase-order ids to the contract's pattern ^[0-9]{10}$.
func TestDigitsIsTheContracts(t *testing.T) {
	re := regexp.MustCompile(`^[0-9]{10}$`)
	cases := []string{"", "5105600101", "510560010", "51056001011", "510560010a", " 5105600101", "5105600101\n",
		"٥١٠٥٦٠٠١٠١", "+105600101", "-105600101", "0000000000", "9999999999"}
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "0123456789/:a \x00\xff"
	for range 5000 {
		b := make([]byte, 8+rng.IntN(5))
		for i := range b {
			b[i] = "0123456789"[rng.IntN(10)]
			if rng.IntN(12) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		for _, p := range []idForm{invoiceIDPattern, poIDPattern} {
			if got, want := p.MatchString(s), re.MatchString(s); got != want {
				t.Fatalf("%q: %v, the contract's pattern says %v", s, got, want)
			}
		}
	}
}

// TestRequestContextCarriesTheSpan: the key the OpenTelemetry API finds a
// span under is learnt, so that a request's context answers the
// operation's span without a copy of the request (carriesSpan); children
// still find their own, and a context without the span its parent's.
func TestRequestContextCarriesTheSpan(t *testing.T) {
	if spanKey == nil {
		t.Fatal("the span key was not learnt: every traced REST call copies its request")
	}
	sc := func(id byte) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{id}, TraceFlags: trace.FlagsSampled})
	}
	parent := trace.ContextWithRemoteSpanContext(context.Background(), sc(1))
	rc := &requestContext{Context: parent}
	if got := trace.SpanContextFromContext(rc); !got.Equal(sc(1).WithRemote(true)) {
		t.Fatalf("before the operation's span: %v, want the remote parent", got)
	}
	rc.rec.span = trace.SpanFromContext(trace.ContextWithSpanContext(context.Background(), sc(2)))
	if !carriesSpan(rc, &rc.rec) || carriesSpan(parent, &rc.rec) || carriesSpan(rc, &requestRecord{}) {
		t.Error("carriesSpan answers for a context or a record not the request's")
	}
	if got := trace.SpanContextFromContext(rc); !got.Equal(sc(2)) {
		t.Errorf("the request's context answers %v, want the operation's span", got)
	}
	child := trace.ContextWithSpanContext(rc, sc(3))
	if got := trace.SpanContextFromContext(child); !got.Equal(sc(3)) {
		t.Errorf("a child context answers %v, want its own span", got)
	}
}
