package console

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestNumbersForTheReadersLocale(t *testing.T) {
	gross := decimal.RequireFromString("13500")
	for _, tc := range []struct{ acceptLanguage, amount string }{
		{"", "13,500.00 EUR"},
		{"en-US,en;q=0.9", "13,500.00 EUR"},
		{"de-DE,de;q=0.9,en;q=0.8", "13.500,00 EUR"},
		{"de-CH", "13’500.00 EUR"},
		{"fr-FR", "13\u202f500,00 EUR"},
		{"sv", "13\u00a0500,00 EUR"},
		{"en;q=0.5, de;q=0.9", "13.500,00 EUR"},
		{"xx-YY, nl;q=0.4", "13.500,00 EUR"},
		{"de;q=0, en", "13,500.00 EUR"},
		{"*, de;q=bad", "13,500.00 EUR"},
	} {
		if got := numbersFor(tc.acceptLanguage).amount(gross, "EUR"); got != tc.amount {
			t.Errorf("Accept-Language %q: %q, want %q", tc.acceptLanguage, got, tc.amount)
		}
	}
	en, de := numbersFor("en"), numbersFor("de")
	for _, tc := range []struct {
		d                    string
		amount, price, count string
		deAmount             string
	}{
		{"0", "0.00", "0.00", "0", "0,00"},
		{"125", "125.00", "125.00", "125", "125,00"},
		{"135.0000", "135.00", "135.00", "135", "135,00"},
		{"1234567.891", "1,234,567.89", "1,234,567.891", "1,234,567.891", "1.234.567,89"},
		{"0.12345", "0.12", "0.1235", "0.1235", "0,12"},
		{"-1000", "-1,000.00", "-1,000.00", "-1,000", "-1.000,00"},
		{"8.00", "8.00", "8.00", "8", "8,00"},
	} {
		d := decimal.RequireFromString(tc.d)
		if got := en.fixed(d, 2); got != tc.amount {
			t.Errorf("amount %s: %q, want %q", tc.d, got, tc.amount)
		}
		if got := en.price(d, ""); got != tc.price {
			t.Errorf("price %s: %q, want %q", tc.d, got, tc.price)
		}
		if got := en.number(d); got != tc.count {
			t.Errorf("number %s: %q, want %q", tc.d, got, tc.count)
		}
		if got := de.fixed(d, 2); got != tc.deAmount {
			t.Errorf("German amount %s: %q, want %q", tc.d, got, tc.deAmount)
		}
	}
	if got := de.percent(decimal.RequireFromString("2.50")); got != "2,5 %" {
		t.Errorf("German percent: %q", got)
	}
}

func TestWaited(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		30 * time.Second:                "less than a minute",
		5 * time.Minute:                 "5 min",
		2*time.Hour + 5*time.Minute:     "2 h 5 min",
		3*24*time.Hour + 4*time.Hour:    "3 d 4 h",
		24*time.Hour + 59*time.Minute:   "1 d 0 h",
		59*time.Minute + 59*time.Second: "59 min",
	} {
		if got := waited(now.Add(-d), now); got != want {
			t.Errorf("waited %v: %q, want %q", d, got, want)
		}
	}
	if got := waited(time.Time{}, now); got != "" {
		t.Errorf("waited since no time: %q", got)
	}
}
