package sap

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// TestPlainValuesReadAsBefore holds the fast readers of dates and
// decimals to the general ones: every JSON value reads to the same value,
// or fails, exactly as parseDate and decimal.NewFromString make of it.
func TestPlainValuesReadAsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		return b.String()
	}
	dates := []string{`"/Date(1795132800000)/"`, `"\/Date(1795132800000)\/"`, `"\/Date(1795132800000)/"`, `"/Date(-86400000)/"`,
		`"/Date(1795132800000+0120)/"`, `"/Date(1795132800000-0500)/"`, `"/Date(1795132800000+12)/"`, `"/Date(1795132800000+-123)/"`,
		`"/Date()/"`, `"/Date(x)/"`, `"/Date(+5)/"`, `"/Date(5)"`, `" /Date(5)/"`, `"2026-11-20T00:00:00Z"`, `""`, `null`, `5`,
		`"/Date(99999999999999999999)/"`, `"/Date(0123)/"`, `"/date(5)/"`, `"\u002FDate(5)/"`}
	for range 3000 {
		ms := digits(1 + rng.IntN(19))
		if rng.IntN(3) == 0 {
			ms = "-" + ms
		}
		off := ""
		if rng.IntN(2) == 0 {
			off = string("+-"[rng.IntN(2)]) + digits(3+rng.IntN(3))
		}
		slash := "/"
		if rng.IntN(2) == 0 {
			slash = `\/`
		}
		dates = append(dates, fmt.Sprintf(`"%sDate(%s%s)%s"`, slash, ms, off, slash))
	}
	for _, b := range dates {
		var fast sapDate
		fastErr := fast.UnmarshalJSON([]byte(b))
		var slow sapDate
		slowErr := slowDate(&slow, []byte(b))
		if (fastErr != nil) != (slowErr != nil) || !fast.Time.Equal(slow.Time) || fast.Time.Location() != slow.Time.Location() {
			t.Fatalf("date %s: %v %v, before %v %v", b, fast.Time, fastErr, slow.Time, slowErr)
		}
	}

	decimals := []string{`"1000.00"`, `"0.00"`, `"-0.00"`, `"10.000"`, `"5"`, `"-5"`, `5`, `12.5`, `-0.5`, `1e3`, `"1."`, `".5"`, `"-"`,
		`""`, `" 1.5 "`, `"1,5"`, `"1.2.3"`, `"+1"`, `"0012.50"`, `"123456789012345678"`, `"1234567890123456789"`, `"0.000000000000000001"`}
	for range 3000 {
		d := digits(1 + rng.IntN(20))
		if rng.IntN(2) == 0 {
			d += "." + digits(1+rng.IntN(6))
		}
		if rng.IntN(3) == 0 {
			d = "-" + d
		}
		if rng.IntN(2) == 0 {
			d = `"` + d + `"`
		}
		decimals = append(decimals, d)
	}
	for _, b := range decimals {
		var fast sapDecimal
		fastErr := fast.UnmarshalJSON([]byte(b))
		var slow sapDecimal
		slowErr := slowDecimal(&slow, []byte(b))
		if (fastErr != nil) != (slowErr != nil) || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decimal %s: %#v %v, before %#v %v", b, fast, fastErr, slow, slowErr)
		}
	}
}

// slowDate is sapDate.UnmarshalJSON without its fast path.
func slowDate(d *sapDate, b []byte) error {
	if _, ok := plainDate(b); !ok {
		return d.UnmarshalJSON(b)
	}
	s, _ := plainString(b)
	if s == "" {
		// an escaped slash: what encoding/json makes of it
		s = strings.ReplaceAll(string(b[1:len(b)-1]), `\/`, "/")
	}
	t, err := parseDate(s)
	d.Time = t
	return err
}

// slowDecimal is sapDecimal.UnmarshalJSON without its fast path.
func slowDecimal(d *sapDecimal, b []byte) error {
	if _, ok := plainDecimal(b); !ok {
		return d.UnmarshalJSON(b)
	}
	s := strings.Trim(string(b), `"`)
	v, err := decimal.NewFromString(s)
	d.Decimal = v
	return err
}
