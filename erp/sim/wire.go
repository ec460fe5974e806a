package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// field is one property of an OData entity as it goes on the wire.
type field struct {
	name  string
	value any
}

// obj is an OData entity or complex value whose properties keep their order
// when marshalled, as SAP's gateway emits them.
type obj []field

// MarshalJSON writes the properties in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, fmt.Errorf("property %s: %w", f.name, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// get returns the value of a property.
func (o obj) get(name string) (any, bool) {
	for _, f := range o {
		if f.name == name {
			return f.value, true
		}
	}
	return nil, false
}

// str returns a string property, or "" when it is absent or not a string.
func (o obj) str(name string) string {
	v, _ := o.get(name)
	s, _ := v.(string)
	return s
}

// results is an expanded navigation property or a list: {"results":[...]}.
type results []obj

// MarshalJSON wraps the entities in a results object and never emits null.
func (r results) MarshalJSON() ([]byte, error) {
	if r == nil {
		r = results{}
	}
	return json.Marshal(struct {
		Results []obj `json:"results"`
	}{r})
}

// deferred is a navigation property that was not expanded.
type deferred string

// MarshalJSON writes the deferred link SAP sends instead of the entities.
func (d deferred) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]map[string]string{"__deferred": {"uri": string(d)}})
}

// wireDate formats t as an OData v2 JSON date.
func wireDate(t time.Time) string {
	return "/Date(" + strconv.FormatInt(t.UnixMilli(), 10) + ")/"
}

// optionalDate is wireDate of t, or null for the zero time, as SAP sends a
// date that is not set.
func optionalDate(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return wireDate(t)
}

// percent formats a percentage with three decimals, as SAP declares the
// cash discount percentages (Edm.Decimal, scale 3).
func percent(d decimal.Decimal) string { return d.StringFixed(3) }

// amount formats a currency amount with two decimals.
func amount(d decimal.Decimal) string { return d.StringFixed(2) }

// quantity formats a quantity with three decimals.
func quantity(d decimal.Decimal) string { return d.StringFixed(3) }

// day is a calendar date at UTC midnight.
func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// itemFields are the properties holding item numbers, which SAP compares as
// numbers: '10' and '00010' are the same item.
var itemFields = map[string]bool{
	"PurchaseOrderItem":    true,
	"SupplierInvoiceItem":  true,
	"MaterialDocumentItem": true,
}

// sameValue compares two string property values, numerically for item
// numbers.
func sameValue(fieldName, a, b string) bool {
	if itemFields[fieldName] && allDigits(a) && allDigits(b) {
		return strings.TrimLeft(a, "0") == strings.TrimLeft(b, "0")
	}
	return a == b
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// itemNumber pads an item number to SAP's five digits for messages.
func itemNumber(item string) string {
	if allDigits(item) && len(item) < 5 {
		return strings.Repeat("0", 5-len(item)) + item
	}
	return item
}
