package console

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// numbers is how a reader's locale writes numbers: the mark between
// groups of thousands and the decimal mark.
type numbers struct{ group, decimal string }

// englishNumbers is the default, and that of every locale not in
// localeNumbers.
var englishNumbers = numbers{",", "."}

// localeNumbers are the locales, by language or by language and region,
// whose numbers are not written as in English.
var localeNumbers = func() map[string]numbers {
	m := map[string]numbers{
		"de-ch": {"’", "."}, "de-li": {"’", "."}, "it-ch": {"’", "."},
		"fr-ch": {"\u202f", ","}, "pt-pt": {"\u00a0", ","},
	}
	for _, l := range []string{"de", "es", "it", "nl", "pt", "da", "id", "tr", "el", "ro", "sl", "hr", "sr", "is"} {
		m[l] = numbers{".", ","}
	}
	m["fr"] = numbers{"\u202f", ","}
	for _, l := range []string{"sv", "nb", "nn", "no", "fi", "cs", "sk", "pl", "ru", "uk", "hu", "lt", "lv", "et", "bg"} {
		m[l] = numbers{"\u00a0", ","}
	}
	for _, l := range []string{"en", "ja", "zh", "ko", "he", "th", "ga", "mt"} {
		m[l] = englishNumbers
	}
	return m
}()

// numbersFor picks the number format of the reader's most wanted language
// in an Accept-Language header that the console knows, by language and
// region first, then by language; English when none is known.
func numbersFor(acceptLanguage string) numbers {
	type wanted struct {
		tag string
		q   float64
	}
	var langs []wanted
	for part := range strings.SplitSeq(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(part, ";")
		tag = strings.ToLower(strings.TrimSpace(tag))
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			q = f
		}
		if tag == "" || tag == "*" || q == 0 || len(tag) > 35 {
			continue
		}
		langs = append(langs, wanted{strings.ReplaceAll(tag, "_", "-"), q})
	}
	slices.SortStableFunc(langs, func(a, b wanted) int { return cmp.Compare(b.q, a.q) })
	for _, l := range langs {
		if n, ok := localeNumbers[l.tag]; ok {
			return n
		}
		lang, _, _ := strings.Cut(l.tag, "-")
		if n, ok := localeNumbers[lang]; ok {
			return n
		}
	}
	return englishNumbers
}

// fixed writes d with exactly places decimals, its thousands grouped.
func (n numbers) fixed(d decimal.Decimal, places int32) string {
	s := d.StringFixed(places)
	sign := ""
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = "-", rest
	}
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	b.WriteString(sign)
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteString(n.group)
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteString(n.decimal)
		b.WriteString(frac)
	}
	return b.String()
}

// places is how many decimals d has, trailing zeros aside.
func places(d decimal.Decimal) int32 {
	_, frac, _ := strings.Cut(d.String(), ".")
	return int32(len(frac))
}

// amount writes an amount of money: two decimals, grouped, and its
// currency, e.g. 13,500.00 EUR.
func (n numbers) amount(d decimal.Decimal, currency string) string {
	return strings.TrimSpace(n.fixed(d, 2) + " " + currency)
}

// price writes a unit price: two to four decimals, as many as it has.
func (n numbers) price(d decimal.Decimal, currency string) string {
	return strings.TrimSpace(n.fixed(d, min(max(places(d), 2), 4)) + " " + currency)
}

// number writes a quantity or a percentage: as many decimals as it has,
// up to four, grouped.
func (n numbers) number(d decimal.Decimal) string {
	return n.fixed(d, min(places(d), 4))
}

// percent writes a percentage, e.g. 8 %.
func (n numbers) percent(d decimal.Decimal) string { return n.number(d) + " %" }

// waited says how long since from, in days, hours and minutes.
func waited(from, now time.Time) string {
	d := now.Sub(from)
	switch {
	case from.IsZero():
		return ""
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%d d %d h", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// day writes a date of the ERP, or nothing for none.
func day(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.DateOnly)
}
