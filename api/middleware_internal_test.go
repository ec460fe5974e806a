package api

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
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
