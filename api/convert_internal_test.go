package api

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
)

// TestDecimalTextIsTheLibrarys holds amount and quantity to what
// decimal.Decimal's StringFixed(2) and String write, for coefficients of
// every size and sign around the int64 path's bounds, exponents from
// -20 to 3, and the unit prices DivRound makes.
func TestDecimalTextIsTheLibrarys(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var ds []decimal.Decimal
	for _, s := range []string{"0", "0.00", "-0.001", "0.005", "-0.005", "0.004", "0.015", "-0.015", "1000.00", "10.000",
		"1", "-1", "100", "0.1", "12.345", "-12.345", "99.995", "-99.995", "9223372036854775807", "-9223372036854775808",
		"922337203685477580.7", "99999999999999999.99", "123456789012345678901234567890.123", "0.00000000000000000001"} {
		ds = append(ds, decimal.RequireFromString(s))
	}
	for range 20000 {
		digits := 1 + rng.IntN(21)
		c := new(big.Int)
		for range digits {
			c.Mul(c, big.NewInt(10))
			c.Add(c, big.NewInt(int64(rng.IntN(10))))
		}
		if rng.IntN(2) == 0 {
			c.Neg(c)
		}
		ds = append(ds, decimal.NewFromBigInt(c, int32(rng.IntN(24))-20))
	}
	for range 2000 {
		amt := decimal.New(rng.Int64N(10_000_000), -2)
		qty := decimal.New(1+rng.Int64N(100_000), -3)
		ds = append(ds, amt.DivRound(qty, 4))
	}
	for _, d := range ds {
		if got, want := amount(d), d.StringFixed(2); got != want {
			t.Fatalf("amount(%s) = %q, StringFixed(2) %q", d.String(), got, want)
		}
		if got, want := quantity(d), d.String(); got != want {
			t.Fatalf("quantity of coefficient %s exponent %d = %q, String %q", d.Coefficient(), d.Exponent(), got, want)
		}
	}
}

func BenchmarkDecimalText(b *testing.B) {
	amt, qty := decimal.RequireFromString("1000.00"), decimal.RequireFromString("10.000")
	price := amt.DivRound(qty, 4)
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = amount(amt), quantity(qty), amount(price)
	}
}
