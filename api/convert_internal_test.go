package api

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
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

// TestUnitPriceIsTheLibrarys holds unitPrice to amount(l.UnitPrice()),
// DivRound and StringFixed(2), for amounts and quantities of either sign,
// exponents from -20 to 2, coefficients around the int64 path's bounds, a
// zero quantity and remainders of exactly one half.
func TestUnitPriceIsTheLibrarys(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	random := func(maxDigits int) decimal.Decimal {
		digits := 1 + rng.IntN(maxDigits)
		c := new(big.Int)
		for range digits {
			c.Mul(c, big.NewInt(10))
			c.Add(c, big.NewInt(int64(rng.IntN(10))))
		}
		if rng.IntN(4) == 0 {
			c.Neg(c)
		}
		return decimal.NewFromBigInt(c, int32(rng.IntN(23))-20)
	}
	type pair struct{ amt, qty string }
	var lines []erp.InvoiceLine
	for _, p := range []pair{{"1000.00", "10.000"}, {"1", "3"}, {"2", "3"}, {"-2", "3"}, {"2", "-3"}, {"0.00005", "1"},
		{"-0.00005", "1"}, {"0.00015", "1"}, {"0.000049", "1"}, {"100", "0"}, {"0", "7"}, {"1", "8"}, {"-1", "8"},
		{"999999999999999999", "0.001"}, {"0.000000000000000001", "999999999999999999"}, {"9223372036854775807", "1"}} {
		lines = append(lines, erp.InvoiceLine{Amount: decimal.RequireFromString(p.amt), Quantity: decimal.RequireFromString(p.qty)})
	}
	for range 20000 {
		lines = append(lines, erp.InvoiceLine{Amount: random(20), Quantity: random(20)})
	}
	for range 5000 {
		lines = append(lines, erp.InvoiceLine{Amount: decimal.New(rng.Int64N(10_000_000), -2),
			Quantity: decimal.New(1+rng.Int64N(100_000), -3)})
	}
	for _, l := range lines {
		want := amount(l.UnitPrice())
		if lib := l.UnitPrice().StringFixed(2); want != lib {
			t.Fatalf("amount(%s) = %q, StringFixed(2) %q", l.UnitPrice(), want, lib)
		}
		if got := unitPrice(l); got != want {
			t.Fatalf("unitPrice(%s / %s) = %q, amount(UnitPrice()) %q", l.Amount, l.Quantity, got, want)
		}
	}
}
