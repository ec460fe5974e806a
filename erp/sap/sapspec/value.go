package sapspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"
)

// valueMode is what a JSON entity is: an answer, or the body of a create
// or an update.
type valueMode int

const (
	modeAnswer valueMode = iota
	modeCreate
	modeUpdate
)

func (svc *Service) structuredOf(et *EntityType) structured {
	return structured{qualified: et.QualifiedName(), properties: et.Properties, navs: et.Navigations, svc: svc}
}

var (
	reJSONDate       = regexp.MustCompile(`^/Date\(-?\d+\)/$`)
	reJSONDateOffset = regexp.MustCompile(`^/Date\(-?\d+([+-]\d{4})?\)/$`)
	reJSONDecimal    = regexp.MustCompile(`^[-+]?(\d+(\.\d*)?|\.\d+)$`)
	reJSONInt64      = regexp.MustCompile(`^[-+]?\d+$`)
	reBase64Strict   = regexp.MustCompile(`^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`)
)

// jsonForms says how OData v2 JSON writes each Edm type, for messages.
var jsonForms = map[string]string{
	"Edm.String":         "a string",
	"Edm.Boolean":        "true or false",
	"Edm.Byte":           "a number",
	"Edm.SByte":          "a number",
	"Edm.Int16":          "a number",
	"Edm.Int32":          "a number",
	"Edm.Int64":          `a string of digits such as "12"`,
	"Edm.Decimal":        `a string such as "1000.00"`,
	"Edm.Double":         `a string such as "1.5E+00" or a number`,
	"Edm.Single":         `a string such as "1.5E+00" or a number`,
	"Edm.DateTime":       `a string "/Date(ms)/"`,
	"Edm.DateTimeOffset": `a string "/Date(ms+hhmm)/"`,
	"Edm.Time":           `a string such as "PT12H30M00S"`,
	"Edm.Guid":           `a string such as "005056a2-0000-1ed0-0000-000000000000"`,
	"Edm.Binary":         "a base64 string",
}

// checkObject checks one JSON object against an entity or complex type:
// every member is a declared property or navigation property, and every
// property value has its type's JSON form. __metadata is skipped (in an
// answer its type must be the entity type); a navigation property is
// skipped when deferred ({"__deferred": ...}) and otherwise checked against
// its target type: {"results": [...]} or [...] for many, an object or null
// for one.
func checkObject(svc *Service, st structured, obj map[string]json.RawMessage, mode valueMode) []string {
	var out []string
	names := make([]string, 0, len(obj))
	for n := range obj {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		raw := obj[name]
		if name == "__metadata" {
			if mode == modeAnswer && st.navs != nil {
				var md struct {
					Type string `json:"type"`
				}
				if err := json.Unmarshal(raw, &md); err != nil {
					out = append(out, fmt.Sprintf("%s: __metadata is not an object: %v", st.qualified, err))
				} else if md.Type != "" && md.Type != st.qualified {
					out = append(out, fmt.Sprintf("%s: __metadata.type is %s", st.qualified, md.Type))
				}
			}
			continue
		}
		if p := st.properties[name]; p != nil {
			out = append(out, checkValue(svc, st.qualified, p, raw, mode)...)
			continue
		}
		if nav := st.navs[name]; nav != nil {
			out = append(out, checkNavigation(svc, st.qualified, nav, raw, mode)...)
			continue
		}
		out = append(out, fmt.Sprintf("%s has no property %s", st.qualified, name))
	}
	return out
}

func checkNavigation(svc *Service, owner string, nav *NavigationProperty, raw json.RawMessage, mode valueMode) []string {
	target := svc.structuredOf(svc.EntityTypes[nav.Target])
	raw = bytes.TrimSpace(raw)
	where := owner + "." + nav.Name
	if string(raw) == "null" {
		if nav.Many {
			return []string{fmt.Sprintf("%s leads to many entities and is null; an expanded list is {\"results\":[...]}", where)}
		}
		return nil
	}
	var list []json.RawMessage
	switch {
	case len(raw) > 0 && raw[0] == '[':
		if !nav.Many {
			return []string{fmt.Sprintf("%s leads to one entity and is a list", where)}
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return []string{fmt.Sprintf("%s: %v", where, err)}
		}
	case len(raw) > 0 && raw[0] == '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return []string{fmt.Sprintf("%s: %v", where, err)}
		}
		if _, ok := obj["__deferred"]; ok && len(obj) == 1 {
			if mode != modeAnswer {
				return []string{fmt.Sprintf("%s is deferred in a request body", where)}
			}
			return nil
		}
		if nav.Many {
			res, ok := obj["results"]
			for k := range obj {
				if k != "results" && k != "__count" && k != "__next" {
					ok = false
				}
			}
			if !ok {
				return []string{fmt.Sprintf("%s leads to many entities; expanded, it is {\"results\":[...]}", where)}
			}
			if err := json.Unmarshal(res, &list); err != nil {
				return []string{fmt.Sprintf("%s.results is not a list: %v", where, err)}
			}
		} else {
			return checkObject(svc, target, obj, mode)
		}
	default:
		return []string{fmt.Sprintf("%s is neither deferred nor expanded: %s", where, abbreviate(raw))}
	}
	var out []string
	for _, e := range list {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(e, &obj); err != nil {
			out = append(out, fmt.Sprintf("%s: an entry is not an object: %v", where, err))
			continue
		}
		out = append(out, checkObject(svc, target, obj, mode)...)
	}
	return out
}

// checkValue checks one property value's JSON form, nullability and
// MaxLength, and in a body the property's sap:creatable or sap:updatable.
func checkValue(svc *Service, owner string, p *Property, raw json.RawMessage, mode valueMode) []string {
	where := owner + "." + p.Name
	var out []string
	switch {
	case mode == modeCreate && !p.Creatable:
		out = append(out, fmt.Sprintf("%s is sap:creatable=\"false\" and is set on create", where))
	case mode == modeUpdate && !p.Updatable:
		out = append(out, fmt.Sprintf("%s is sap:updatable=\"false\" and is set on update", where))
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		if !p.Nullable {
			out = append(out, fmt.Sprintf("%s is not nullable and is null", where))
		}
		return out
	}
	bad := func() []string {
		form := jsonForms[p.Type]
		if form == "" {
			form = "a value of " + p.Type
		}
		return append(out, fmt.Sprintf("%s is %s, written in OData v2 JSON as %s; found %s", where, p.Type, form, abbreviate(raw)))
	}
	var str string
	isString := len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &str) == nil
	switch p.Type {
	case "Edm.String":
		if !isString {
			return bad()
		}
		if p.MaxLength > 0 && utf8.RuneCountInString(str) > p.MaxLength {
			out = append(out, fmt.Sprintf("%s has MaxLength %d; found %d characters %s", where, p.MaxLength, utf8.RuneCountInString(str), abbreviate(raw)))
		}
	case "Edm.Boolean":
		if string(raw) != "true" && string(raw) != "false" {
			return bad()
		}
	case "Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32":
		n, err := strconv.ParseInt(string(raw), 10, 64)
		lo, hi := intRange(p.Type)
		if err != nil || n < lo || n > hi {
			return bad()
		}
	case "Edm.Int64":
		if !isString || !reJSONInt64.MatchString(str) {
			return bad()
		}
	case "Edm.Decimal":
		if !isString || !reJSONDecimal.MatchString(str) {
			return bad()
		}
	case "Edm.Double", "Edm.Single":
		s := string(raw)
		if isString {
			s = str
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil && s != "INF" && s != "-INF" && s != "NaN" {
			return bad()
		}
	case "Edm.DateTime":
		if !isString || !reJSONDate.MatchString(str) {
			return bad()
		}
	case "Edm.DateTimeOffset":
		if !isString || !reJSONDateOffset.MatchString(str) {
			return bad()
		}
	case "Edm.Time":
		if !isString || !reTime.MatchString(str) || str == "P" || str == "PT" {
			return bad()
		}
	case "Edm.Guid":
		if !isString || !reGuid.MatchString(str) {
			return bad()
		}
	case "Edm.Binary":
		if !isString || !reBase64Strict.MatchString(str) {
			return bad()
		}
	default:
		st, ok := svc.structured(trimNamespace(svc, p.Type))
		if !ok || st.navs != nil {
			return append(out, fmt.Sprintf("%s has type %s, which the checker does not know", where, p.Type))
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return append(out, fmt.Sprintf("%s is the complex type %s, written as an object; found %s", where, p.Type, abbreviate(raw)))
		}
		out = append(out, checkObject(svc, st, obj, mode)...)
	}
	return out
}

func trimNamespace(svc *Service, name string) string {
	if len(name) > len(svc.Name)+1 && name[:len(svc.Name)+1] == svc.Name+"." {
		return name[len(svc.Name)+1:]
	}
	return name
}

func intRange(edm string) (int64, int64) {
	switch edm {
	case "Edm.Byte":
		return 0, math.MaxUint8
	case "Edm.SByte":
		return math.MinInt8, math.MaxInt8
	case "Edm.Int16":
		return math.MinInt16, math.MaxInt16
	}
	return math.MinInt32, math.MaxInt32
}

func abbreviate(raw []byte) string {
	const max = 60
	if len(raw) > max {
		return string(raw[:max]) + "..."
	}
	return string(raw)
}

// CheckEntity checks one JSON object of an answer, an entity of the entity
// type (or a value of the complex type) typeName, named as CheckDecoded
// takes it: every member must be declared, and every value must have its
// Edm type's OData v2 JSON form (Edm.String a string within MaxLength,
// Edm.Decimal and Edm.Int64 strings, Edm.DateTime "/Date(ms)/",
// Edm.Boolean true or false, Edm.Guid a GUID string, ...), null only where
// the property is nullable. Expanded navigation properties are checked
// against their target type; deferred ones and __metadata are skipped.
func (s *Spec) CheckEntity(typeName string, data []byte) error {
	st, err := s.lookup(typeName)
	if err != nil {
		return mismatchError([]string{err.Error()})
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return mismatchError([]string{fmt.Sprintf("%s: the entity is not a JSON object: %v", st.qualified, err)})
	}
	return mismatchError(checkObject(st.svc, st, obj, modeAnswer))
}

// CheckAnswer checks an OData v2 JSON answer, {"d": {...}} with one entity
// or {"d": {"results": [...]}} (or the older {"d": [...]}) with a list,
// every entity with CheckEntity.
func (s *Spec) CheckAnswer(typeName string, body []byte) error {
	var env struct {
		D json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(body, &env); err != nil || len(env.D) == 0 {
		return mismatchError([]string{fmt.Sprintf("%s: the answer is not {\"d\": ...}: %s", typeName, abbreviate(body))})
	}
	d := bytes.TrimSpace(env.D)
	var list []json.RawMessage
	switch {
	case len(d) > 0 && d[0] == '[':
		if err := json.Unmarshal(d, &list); err != nil {
			return mismatchError([]string{fmt.Sprintf("%s: %v", typeName, err)})
		}
	case len(d) > 0 && d[0] == '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(d, &obj); err != nil {
			return mismatchError([]string{fmt.Sprintf("%s: %v", typeName, err)})
		}
		res, ok := obj["results"]
		if !ok {
			return s.CheckEntity(typeName, d)
		}
		if err := json.Unmarshal(res, &list); err != nil {
			return mismatchError([]string{fmt.Sprintf("%s: \"results\" is not a list: %v", typeName, err)})
		}
	default:
		return mismatchError([]string{fmt.Sprintf("%s: \"d\" is neither an entity nor a list: %s", typeName, abbreviate(d))})
	}
	var out []string
	for _, e := range list {
		out = append(out, Mismatches(s.CheckEntity(typeName, e))...)
	}
	return mismatchError(out)
}

// CheckDecoded checks the JSON member names a decoder reads from entities
// of typeName against the type: each must be a property or navigation
// property it declares. typeName is qualified (API_BUSINESS_PARTNER.A_SupplierType),
// or an unqualified entity type, complex type or entity set name that one
// service alone has. A function import's result is its complex type (for
// Release, API_SUPPLIERINVOICE_PROCESS_SRV.ReleaseInvoiceExportParameters).
// Each mismatch reads "<qualified type> has no property <name>".
func (s *Spec) CheckDecoded(typeName string, jsonNames []string) error {
	st, err := s.lookup(typeName)
	if err != nil {
		return mismatchError([]string{err.Error()})
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range jsonNames {
		if seen[n] {
			continue
		}
		seen[n] = true
		if st.properties[n] == nil && st.navs[n] == nil {
			out = append(out, fmt.Sprintf("%s has no property %s", st.qualified, n))
		}
	}
	return mismatchError(out)
}
