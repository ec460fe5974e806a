package sapspec

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Query options every request may carry besides the resource's own:
// sap-client picks the SAP client (tenant).
var allowedCustom = map[string]bool{"sap-client": true}

// resourceKind is what a request path addresses.
type resourceKind int

const (
	kindCollection resourceKind = iota
	kindEntity
	kindCount
	kindProperty
	kindValue
)

// systemOptions are the system query options each kind of resource takes.
var systemOptions = map[resourceKind][]string{
	kindCollection: {"$filter", "$select", "$expand", "$orderby", "$top", "$skip", "$inlinecount", "$skiptoken", "$format"},
	kindEntity:     {"$select", "$expand", "$format"},
	kindCount:      {"$filter", "$top", "$skip", "$format"},
	kindProperty:   {"$format"},
	kindValue:      nil,
}

// queryOption is one name=value pair of the query, decoded.
type queryOption struct{ name, value string }

// reqCheck collects the mismatches of one request.
type reqCheck struct {
	spec     *Spec
	method   string
	where    string // METHOD SERVICE/resource, the start of every message
	expand   string // the $expand option, which $select depends on
	problems []string
}

func (c *reqCheck) problem(format string, args ...any) {
	c.problems = append(c.problems, c.where+": "+fmt.Sprintf(format, args...))
}

// Check lists every mismatch of one OData request (body is its body, nil
// for none) against the metadata: the service; the entity set or function
// import; key predicates (the key properties, each once, as literals of
// their Edm types); navigation segments; the function import's parameters
// (known names, every mandatory one present, literals of their types) and
// its m:HttpMethod; the method (GET for reads, POST only into a creatable
// set, PUT/PATCH/MERGE only on an updatable one, DELETE only from a
// deletable one); every property named in $filter, $select, $expand and
// $orderby, with the literals $filter compares them with; the system query
// options the resource takes ($format only as json); and every property of
// a JSON body with its JSON form. A GET of $metadata and of the service
// root (as the CSRF token fetch with X-CSRF-Token: Fetch is) are valid.
// Query options other than the system ones, the function import's
// parameters and sap-client are mismatches.
//
// Each mismatch is one line "METHOD SERVICE/resource: what is wrong", with
// the resource path decoded and without the query. The error is a
// *MismatchError, or nil when the request matches.
func (s *Spec) Check(req *http.Request, body []byte) error {
	c := &reqCheck{spec: s, method: effectiveMethod(req)}
	c.check(req, body)
	return mismatchError(c.problems)
}

// effectiveMethod is the request's method, or the one a POST tunnels in
// X-HTTP-Method.
func effectiveMethod(req *http.Request) string {
	m := strings.ToUpper(req.Method)
	if m == "" {
		m = http.MethodGet
	}
	if t := strings.ToUpper(req.Header.Get("X-Http-Method")); m == http.MethodPost && t != "" {
		return t
	}
	return m
}

func (c *reqCheck) check(req *http.Request, body []byte) {
	escaped := req.URL.EscapedPath()
	c.where = c.method + " " + req.URL.Path
	i := strings.Index(escaped, ServicePrefix)
	if i < 0 {
		c.problem("not an OData service path %s<SERVICE>/...", ServicePrefix)
		return
	}
	parts := strings.Split(escaped[i+len(ServicePrefix):], "/")
	svcName, err := url.PathUnescape(parts[0])
	if err != nil {
		c.problem("service segment %q is not URL-encoded: %v", parts[0], err)
		return
	}
	svcName, _, _ = strings.Cut(svcName, ";") // ;v=0002 and other matrix parameters
	segs := parts[1:]
	if n := len(segs); n > 0 && segs[n-1] == "" {
		segs = segs[:n-1]
	}
	decoded := make([]string, len(segs))
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			c.where = c.method + " " + svcName + "/" + strings.Join(segs, "/")
			c.problem("path segment %q is not URL-encoded: %v", s, err)
			return
		}
		decoded[i] = d
	}
	c.where = c.method + " " + svcName + "/" + strings.Join(decoded, "/")
	svc := c.spec.Services[svcName]
	if svc == nil {
		c.problem("SAP publishes no service %s here (known: %s)", svcName, strings.Join(c.spec.serviceNames(), ", "))
		return
	}
	query, ok := c.query(req.URL.RawQuery)
	if !ok {
		return
	}

	switch {
	case len(decoded) == 0:
		// The service document; the CSRF token fetch reads it.
		if c.method != http.MethodGet && c.method != http.MethodHead {
			c.problem("the service root is only read (GET, or HEAD to fetch a CSRF token), not %s", c.method)
		}
		c.options(query, []string{"$format"}, nil)
		c.noBody(body)
		return
	case decoded[0] == "$metadata":
		if len(decoded) > 1 {
			c.problem("nothing follows $metadata")
		}
		if c.method != http.MethodGet {
			c.problem("$metadata is only read (GET), not %s", c.method)
		}
		c.options(query, nil, nil)
		return
	case decoded[0] == "$batch":
		c.problem("a $batch request is not checked part by part; send the requests one by one")
		return
	}

	name, pred, hasPred, ok := c.segment(decoded[0])
	if !ok {
		return
	}
	if fi := svc.FunctionImports[name]; fi != nil && !hasPred {
		c.functionImport(svc, fi, decoded[1:], query, body)
		return
	}
	set := svc.EntitySets[name]
	if set == nil {
		c.problem("%s has no entity set or function import %s", svcName, name)
		return
	}
	c.resource(svc, set, pred, hasPred, decoded[1:], query, body)
}

// query decodes the query string, keeping the order; a name given twice is
// a mismatch.
func (c *reqCheck) query(raw string) ([]queryOption, bool) {
	var out []queryOption
	seen := map[string]bool{}
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		n, v, _ := strings.Cut(part, "=")
		name, err1 := url.QueryUnescape(n)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			c.problem("query option %q is not URL-encoded", part)
			return nil, false
		}
		if seen[name] {
			c.problem("query option %s is given more than once", name)
		}
		seen[name] = true
		if name == "$expand" {
			c.expand = value
		}
		out = append(out, queryOption{name, value})
	}
	return out, true
}

// options checks the query options against the system ones the resource
// takes and the custom ones (function import parameters) it takes.
func (c *reqCheck) options(query []queryOption, system []string, custom func(string) bool) {
	for _, q := range query {
		switch {
		case strings.HasPrefix(q.name, "$"):
			if !slices.Contains(systemOptions[kindCollection], q.name) {
				c.problem("%s is not an OData v2 system query option", q.name)
			} else if !slices.Contains(system, q.name) {
				c.problem("%s does not apply here", q.name)
			} else {
				c.optionValue(q)
			}
		case allowedCustom[q.name]:
		case custom != nil && custom(q.name):
		default:
			c.problem("query option %s is neither a system query option nor sap-client", q.name)
		}
	}
}

var reDigits = regexp.MustCompile(`^\d+$`)

// optionValue checks the values of the options that are not about
// properties.
func (c *reqCheck) optionValue(q queryOption) {
	switch q.name {
	case "$format":
		if q.value != "json" {
			c.problem("$format=%s: the client reads JSON, $format=json", q.value)
		}
	case "$top", "$skip":
		if !reDigits.MatchString(q.value) {
			c.problem("%s=%s is not a non-negative integer", q.name, q.value)
		}
	case "$inlinecount":
		if q.value != "allpages" && q.value != "none" {
			c.problem("$inlinecount=%s: want allpages or none", q.value)
		}
	case "$skiptoken":
		if q.value == "" {
			c.problem("$skiptoken is empty")
		}
	}
}

func (c *reqCheck) noBody(body []byte) {
	if len(strings.TrimSpace(string(body))) > 0 {
		c.problem("a %s request here carries no body, this one has %d bytes", c.method, len(body))
	}
}

// segment splits Name(predicate).
func (c *reqCheck) segment(seg string) (name, pred string, hasPred, ok bool) {
	i := strings.IndexByte(seg, '(')
	if i < 0 {
		return seg, "", false, true
	}
	if !strings.HasSuffix(seg, ")") {
		c.problem("segment %s opens a key predicate it does not close", seg)
		return "", "", false, false
	}
	return seg[:i], seg[i+1 : len(seg)-1], true, true
}

// key checks a key predicate against the entity type's key.
func (c *reqCheck) key(et *EntityType, pred string) {
	toks, err := lex(pred)
	if err != nil {
		c.problem("key predicate (%s) of %s: %v", pred, et.Name, err)
		return
	}
	keyList := strings.Join(et.Key, ", ")
	if len(toks) == 2 && toks[0].kind == tLiteral {
		if len(et.Key) != 1 {
			c.problem("key predicate (%s) gives one unnamed value; %s has the key (%s), written (Name=value,...)", pred, et.QualifiedName(), keyList)
			return
		}
		c.keyValue(et, et.Key[0], toks[0])
		return
	}
	given := map[string]bool{}
	for i := 0; ; {
		if toks[i].kind != tIdent || toks[i+1].kind != tEquals || toks[i+2].kind != tLiteral {
			c.problem("key predicate (%s) of %s is not Name=literal,...: the key is (%s)", pred, et.Name, keyList)
			return
		}
		name := toks[i].text
		switch {
		case !slices.Contains(et.Key, name):
			c.problem("key predicate (%s): %s is not a key property of %s, whose key is (%s)", pred, name, et.QualifiedName(), keyList)
		case given[name]:
			c.problem("key predicate (%s) gives %s twice", pred, name)
		default:
			given[name] = true
			c.keyValue(et, name, toks[i+2])
		}
		i += 3
		if toks[i].kind == tEOF {
			break
		}
		if toks[i].kind != tComma {
			c.problem("key predicate (%s) of %s is not Name=literal,...: the key is (%s)", pred, et.Name, keyList)
			return
		}
		i++
	}
	for _, k := range et.Key {
		if !given[k] {
			c.problem("key predicate (%s) lacks key property %s of %s, whose key is (%s)", pred, k, et.QualifiedName(), keyList)
		}
	}
}

func (c *reqCheck) keyValue(et *EntityType, name string, lit token) {
	p := et.Properties[name]
	if lit.lit == litNull {
		c.problem("key property %s of %s is null", name, et.QualifiedName())
		return
	}
	if !fits(p.Type, lit.lit) {
		c.problem("key property %s of %s is %s, written %s; %s is %s", name, et.QualifiedName(), p.Type, literalForm(p.Type), lit.text, lit.lit.describe())
	}
}

// resource walks EntitySet[(key)][/Nav[(key)]]...[/Property[/$value]|/$count]
// and checks the method, the query and the body against where it ends.
func (c *reqCheck) resource(svc *Service, set *EntitySet, pred string, hasPred bool, rest []string, query []queryOption, body []byte) {
	et := svc.EntityTypes[set.EntityType]
	kind := kindCollection
	if hasPred {
		c.key(et, pred)
		kind = kindEntity
	}
	curSet := set                  // the entity set the path is in, when known
	var viaNav *NavigationProperty // the last navigation, when the path ends in one
	var assoc *AssociationSet
	for _, seg := range rest {
		switch {
		case seg == "$count":
			if kind != kindCollection {
				c.problem("$count follows a collection only")
				return
			}
			kind = kindCount
			continue
		case seg == "$value":
			if kind != kindProperty {
				c.problem("$value follows a property only (these entity types have no media stream)")
				return
			}
			kind = kindValue
			continue
		case kind == kindCount || kind == kindValue || kind == kindProperty:
			c.problem("nothing but $value follows a property, and nothing follows $count or $value; found %s", seg)
			return
		case kind == kindCollection:
			c.problem("%s follows a collection; a key predicate must pick one entity first", seg)
			return
		}
		name, p, hasP, ok := c.segment(seg)
		if !ok {
			return
		}
		if nav := et.Navigations[name]; nav != nil {
			from := et
			et = svc.EntityTypes[nav.Target]
			viaNav = nav
			assoc, curSet = svc.navigationSets(from, nav)
			kind = kindEntity
			if nav.Many {
				kind = kindCollection
			}
			if hasP {
				if !nav.Many {
					c.problem("navigation property %s of %s leads to one entity and takes no key predicate", name, from.QualifiedName())
				} else {
					c.key(et, p)
				}
				kind = kindEntity
			}
			continue
		}
		if prop := et.Properties[name]; prop != nil {
			if hasP {
				c.problem("property %s takes no key predicate", name)
			}
			kind = kindProperty
			viaNav = nil
			continue
		}
		c.problem("%s has no property or navigation property %s", et.QualifiedName(), name)
		return
	}

	c.methodOn(kind, curSet, assoc, viaNav, et)
	c.options(query, systemOptions[kind], nil)
	for _, q := range query {
		c.propertyOption(svc, et, q)
	}
	switch {
	case c.method == http.MethodPost && kind == kindCollection:
		c.entityBody(svc, et, body, modeCreate)
	case (c.method == http.MethodPut || c.method == http.MethodPatch || c.method == "MERGE") && kind == kindEntity:
		c.entityBody(svc, et, body, modeUpdate)
	case c.method == http.MethodGet || c.method == http.MethodDelete || c.method == http.MethodHead:
		c.noBody(body)
	}
}

// navigationSets finds the association set of a navigation and the entity
// set it leads into; either is nil when the container does not bind it.
func (svc *Service) navigationSets(from *EntityType, nav *NavigationProperty) (*AssociationSet, *EntitySet) {
	assocName := strings.TrimPrefix(nav.Relationship, svc.Name+".")
	for _, as := range svc.AssociationSets {
		if as.Association != assocName {
			continue
		}
		for _, e := range as.Ends {
			if e.Role == nav.ToRole {
				return as, svc.EntitySets[e.EntitySet]
			}
		}
	}
	return nil, nil
}

// methodOn checks the method against what the path ends in.
func (c *reqCheck) methodOn(kind resourceKind, set *EntitySet, assoc *AssociationSet, viaNav *NavigationProperty, et *EntityType) {
	m := c.method
	if m == http.MethodGet || m == http.MethodHead {
		return
	}
	setName := et.Name
	if set != nil {
		setName = set.Name
	}
	switch {
	case m == http.MethodPost && kind == kindCollection:
		switch {
		case viaNav != nil && assoc != nil && !assoc.Creatable:
			c.problem("POST creates through navigation %s only where its association set is creatable; %s is sap:creatable=\"false\"", viaNav.Name, assoc.Name)
		case viaNav == nil && set != nil && !set.Creatable:
			c.problem("POST creates an entity only in a creatable entity set; %s is sap:creatable=\"false\"", setName)
		}
	case m == http.MethodPost:
		c.problem("POST creates an entity in a collection; this path addresses one entity or a property (a read is a GET)")
	case (m == http.MethodPut || m == http.MethodPatch || m == "MERGE") && kind == kindEntity:
		if set != nil && !set.Updatable {
			c.problem("%s changes an entity only in an updatable entity set; %s is sap:updatable=\"false\"", m, setName)
		}
	case m == http.MethodDelete && kind == kindEntity:
		if set != nil && !set.Deletable {
			c.problem("DELETE removes an entity only from a deletable entity set; %s is sap:deletable=\"false\"", setName)
		}
	default:
		c.problem("%s does not apply to this path (reads are GET)", m)
	}
}

// propertyOption checks the options that name properties: $filter,
// $select, $expand and $orderby.
func (c *reqCheck) propertyOption(svc *Service, et *EntityType, q queryOption) {
	switch q.name {
	case "$filter":
		for _, p := range checkFilter(svc, et, q.value) {
			c.problems = append(c.problems, c.where+": "+p)
		}
	case "$expand":
		for _, path := range splitList(q.value) {
			cur := et
			for _, seg := range strings.Split(path, "/") {
				nav := cur.Navigations[seg]
				if nav == nil {
					if cur.Properties[seg] != nil {
						c.problem("$expand: %s is a property of %s, not a navigation property", seg, cur.QualifiedName())
					} else {
						c.problem("$expand: %s has no navigation property %s", cur.QualifiedName(), seg)
					}
					break
				}
				cur = svc.EntityTypes[nav.Target]
			}
		}
	case "$select":
		expanded := map[string]bool{}
		for _, q2 := range strings.Split(c.expand, ",") {
			path := strings.TrimSpace(q2)
			for i := range len(path) {
				if path[i] == '/' {
					expanded[path[:i]] = true
				}
			}
			expanded[path] = true
		}
		for _, path := range splitList(q.value) {
			c.selectPath(svc, et, path, expanded)
		}
	case "$orderby":
		for _, item := range splitList(q.value) {
			path, dir, _ := strings.Cut(item, " ")
			if d := strings.TrimSpace(dir); d != "" && d != "asc" && d != "desc" {
				c.problem("$orderby: %s: the direction is asc or desc, not %s", item, d)
			}
			c.orderPath(svc, et, path)
		}
	}
}

func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (c *reqCheck) selectPath(svc *Service, et *EntityType, path string, expanded map[string]bool) {
	segs := strings.Split(path, "/")
	cur := et
	for i, seg := range segs {
		last := i == len(segs)-1
		if seg == "*" && last {
			return
		}
		if cur.Properties[seg] != nil {
			if !last {
				c.problem("$select: %s: property %s of %s has nothing below it", path, seg, cur.QualifiedName())
			}
			return
		}
		nav := cur.Navigations[seg]
		if nav == nil {
			c.problem("$select: %s has no property %s", cur.QualifiedName(), seg)
			return
		}
		if !last && !expanded[strings.Join(segs[:i+1], "/")] {
			c.problem("$select: %s selects below navigation %s, which $expand does not expand", path, strings.Join(segs[:i+1], "/"))
		}
		cur = svc.EntityTypes[nav.Target]
	}
}

func (c *reqCheck) orderPath(svc *Service, et *EntityType, path string) {
	segs := strings.Split(strings.TrimSpace(path), "/")
	cur := et
	for i, seg := range segs {
		if prop := cur.Properties[seg]; prop != nil && i == len(segs)-1 {
			if !prop.Sortable {
				c.problem("$orderby: property %s of %s is not sortable (sap:sortable=\"false\")", seg, cur.QualifiedName())
			}
			return
		}
		nav := cur.Navigations[seg]
		switch {
		case nav == nil:
			c.problem("$orderby: %s has no property %s", cur.QualifiedName(), seg)
			return
		case nav.Many:
			c.problem("$orderby: navigation property %s of %s leads to many entities, which cannot order", seg, cur.QualifiedName())
			return
		case i == len(segs)-1:
			c.problem("$orderby: %s is a navigation property of %s; order by one of its properties", seg, cur.QualifiedName())
			return
		}
		cur = svc.EntityTypes[nav.Target]
	}
}

// functionImport checks a call of a function import.
func (c *reqCheck) functionImport(svc *Service, fi *FunctionImport, rest []string, query []queryOption, body []byte) {
	if len(rest) > 0 {
		c.problem("function import %s: nothing follows a function import in the path, found %s", fi.Name, strings.Join(rest, "/"))
	}
	if c.method != fi.HTTPMethod {
		c.problem("function import %s is called with %s (m:HttpMethod), not %s", fi.Name, fi.HTTPMethod, c.method)
	}
	var system []string
	ret := fi.ReturnType
	many := strings.HasPrefix(ret, "Collection(")
	ret = strings.TrimSuffix(strings.TrimPrefix(ret, "Collection("), ")")
	et := svc.EntityTypes[strings.TrimPrefix(ret, svc.Name+".")]
	switch {
	case et != nil && many:
		system = systemOptions[kindCollection]
	case et != nil:
		system = systemOptions[kindEntity]
	default:
		system = []string{"$format"}
	}
	// Unknown parameters are reported below, with the function import's own.
	c.options(query, system, func(string) bool { return true })
	given := map[string]bool{}
	for _, q := range query {
		if strings.HasPrefix(q.name, "$") {
			if et != nil {
				c.propertyOption(svc, et, q)
			}
			continue
		}
		p := fi.Parameter(q.name)
		if p == nil {
			if !allowedCustom[q.name] {
				c.problem("function import %s has no parameter %s (its parameters: %s)", fi.Name, q.name, paramList(fi))
			}
			continue
		}
		given[p.Name] = true
		lit, err := literal(q.value)
		switch {
		case err != nil:
			c.problem("function import %s: parameter %s: %v; %s is written %s", fi.Name, p.Name, err, p.Type, literalForm(p.Type))
		case lit.lit == litNull && !p.Nullable:
			c.problem("function import %s: parameter %s is mandatory and cannot be null", fi.Name, p.Name)
		case !fits(p.Type, lit.lit):
			c.problem("function import %s: parameter %s is %s, written %s; %s is %s", fi.Name, p.Name, p.Type, literalForm(p.Type), lit.text, lit.lit.describe())
		}
	}
	for _, p := range fi.Parameters {
		if !p.Nullable && !given[p.Name] {
			c.problem("function import %s: required parameter %s (%s) is missing", fi.Name, p.Name, p.Type)
		}
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		c.problem("function import %s takes its parameters in the query; the request has a body of %d bytes", fi.Name, len(body))
	}
}

func paramList(fi *FunctionImport) string {
	var names []string
	for _, p := range fi.Parameters {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// entityBody checks the JSON body of a create or an update.
func (c *reqCheck) entityBody(svc *Service, et *EntityType, body []byte, mode valueMode) {
	if len(strings.TrimSpace(string(body))) == 0 {
		c.problem("a %s of %s carries the entity as JSON; the request has no body", c.method, et.QualifiedName())
		return
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		c.problem("the body is not a JSON object: %v", err)
		return
	}
	for _, p := range checkObject(svc, svc.structuredOf(et), obj, mode) {
		c.problems = append(c.problems, c.where+": body: "+p)
	}
}
