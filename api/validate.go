package api

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/erpgate/erpgate/errmap"
)

// The forms of the ids the API accepts; each matches the contract's pattern.
// Invoice and purchase-order ids, checked on nearly every call (and for a
// call's span once more), are checked without a regular expression.
var (
	invoiceIDPattern  = digits(10) // ^[0-9]{10}$
	poIDPattern       = digits(10) // ^[0-9]{10}$
	itemPattern       = regexp.MustCompile(`^[0-9]{1,5}$`)
	supplierIDPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,10}$`)
	approvalIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
	handoverIDPattern = regexp.MustCompile(`^HO[0-9]{7,12}$`)
	holdIDPattern     = regexp.MustCompile(`^H[0-9]{7,12}$`)
	keyPattern        = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,200}$`)
	amountPattern     = regexp.MustCompile(`^[0-9]{1,13}(\.[0-9]{1,2})?$`)
	fieldNamePattern  = regexp.MustCompile(`^[A-Za-z0-9_.\[\]-]{1,64}$`)
)

// idForm is an id's form: a regular expression, or a check written out.
type idForm interface{ MatchString(s string) bool }

// digits is the form of an id of exactly that many ASCII digits.
type digits int

// MatchString reports whether s is n digits.
func (n digits) MatchString(s string) bool {
	if len(s) != int(n) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkID refuses an id that does not have the form of its kind. The value
// is not echoed: it may be anything.
func checkID(field, value string, pattern idForm, form string) error {
	if !pattern.MatchString(value) {
		return errmap.Invalid(field, "must be "+form)
	}
	return nil
}

// alpha writes an id as SAP's ALPHA conversion shows it: an id of digits
// only without its leading zeros (SAP's item 00010 is 10, its supplier
// 0000100042 is 100042; 0 stays 0), any other id as it is. Item numbers and
// supplier ids reach the ERP in this form, whichever an agent sends.
func alpha(id string) string {
	if !plainInteger([]byte(id)) {
		return id
	}
	t := strings.TrimLeft(id, "0")
	if t == "" && id != "" {
		return "0"
	}
	return t
}

// errorTokens are values an agent may copy from a failed tool call into a
// field that should hold data. They are refused wherever text is written.
var errorTokens = map[string]bool{
	"unknown": true, "n/a": true, "na": true, "none": true, "null": true, "nil": true,
	"undefined": true, "error": true, "timeout": true, "failed": true, "failure": true,
	"not found": true, "-": true, "?": true, "tbd": true, "todo": true,
}

// errorPhrases are parts of error messages that never belong in business text.
var errorPhrases = []string{
	"rate limit", "retry after", "too many requests", "internal server error",
	"service unavailable", "bad gateway", "gateway timeout", "timed out",
	"connection refused", "connection reset", "traceback", "stack trace",
	"exception:", "panic:", "econnrefused", "<html",
}

// looksLikeError reports whether s is empty or reads like error text.
func looksLikeError(s string) bool {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" || errorTokens[t] {
		return true
	}
	for _, p := range errorPhrases {
		if strings.Contains(t, p) {
			return true
		}
	}
	return false
}

// controlRune reports whether r is refused in every text the gateway
// reads: C0 controls other than tab, newline and carriage return (NUL
// among them), DEL, C1 controls, and the bidirectional embeddings,
// overrides and isolates (U+202A–U+202E, U+2066–U+2069), which make text
// read in another order than it is stored (a reason that shows one thing
// to the approver and holds another). The directional marks (U+200E,
// U+200F, U+061C) are let through: they reorder nothing but the neutral
// characters beside them, and mixed right-to-left names need them.
func controlRune(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// hasControl reports whether s holds a controlRune.
func hasControl(s string) bool {
	return strings.IndexFunc(s, controlRune) >= 0
}

// problemControl is the refusal of a text holding a controlRune.
const problemControl = "holds a control or bidirectional-override character; send plain text"

// checkText validates a free-text field: present, within its length, and
// not error text.
func checkText(field, value string, minLen, maxLen int) error {
	n := utf8.RuneCountInString(strings.TrimSpace(value))
	switch {
	case !utf8.ValidString(value):
		return errmap.Invalid(field, "is not valid UTF-8")
	case hasControl(value):
		return errmap.Invalid(field, problemControl)
	case looksLikeError(value):
		return errmap.Invalid(field, "is empty or looks like an error value, not data; send the real value")
	case n < minLen || n > maxLen:
		return errmap.Invalid(field, fmt.Sprintf("must be %d to %d characters", minLen, maxLen))
	}
	return nil
}

// checkOneOf validates an enumerated field. The message lists the values
// when they fit in the head of the body (errmap.HeadLimit); otherwise it
// points to details.allowed, which holds them.
func checkOneOf(field, value string, allowed []string) error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	if looksLikeError(value) {
		return errmap.OneOf(field, "is empty or looks like an error value; use one of", allowed)
	}
	return errmap.OneOf(field, "must be one of", allowed)
}

// checkTime parses an RFC 3339 date-time that must lie in the future, within
// a year of now.
func checkTime(field, value string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, value)
	switch {
	case err != nil:
		return time.Time{}, errmap.Invalid(field, "must be an RFC 3339 date-time such as "+tomorrow(now))
	case !t.After(now):
		return time.Time{}, errmap.Invalid(field, "must be in the future, such as "+tomorrow(now))
	case t.After(now.AddDate(1, 0, 0)):
		return time.Time{}, errmap.Invalid(field, "must be within a year")
	}
	return t, nil
}

// tomorrow is the example a time field's refusal gives: 24 hours from now,
// to the hour, so that a model copying it sends a valid value.
func tomorrow(now time.Time) string {
	return now.Add(24 * time.Hour).UTC().Truncate(time.Hour).Format(time.RFC3339)
}
