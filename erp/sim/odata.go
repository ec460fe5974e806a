package sim

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// maxBody bounds request bodies; the simulator's payloads are tiny.
const maxBody = 1 << 20

// serveOData answers every request under the gateway's service prefix.
func (s *Server) serveOData(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, servicePrefix)
	name, sub, _ := strings.Cut(rest, "/")
	// Segment parameters such as ";v=0002" or ";o=LOCAL" select versions
	// and systems; the simulator has one of each.
	name, _, _ = strings.Cut(name, ";")
	svc := s.services[strings.ToUpper(name)]
	if svc == nil {
		e := newError(http.StatusNotFound, "/IWFND/MED/170",
			fmt.Sprintf("No service found for namespace '/SAP/', name '%s', version '0001'", name))
		s.errorResponse(nil, e).write(w)
		return
	}
	if s.opts.RecordCalls {
		sw := &statusWriter{ResponseWriter: w, done: s.record(r, svc.id, sub)}
		defer sw.finish()
		w = sw
	}
	// A read of the service itself, its root (the CSRF fetch) or its
	// $metadata, is spared by faults that do not include fetches: faults
	// are for the calls the gateway makes about invoices, not for the
	// gateway's look at the service when it starts.
	fetch := (r.Method == http.MethodGet || r.Method == http.MethodHead) && (isServiceRoot(sub) || sub == "$metadata")
	if rule, ok := s.matchFault(svc.id, r.Method, sub, fetch); ok {
		s.log.Info("sim: injecting fault", "service", svc.id, "kind", rule.Kind, "method", r.Method, "path", r.URL.Path)
		if s.injectFault(w, r, svc, sub, rule) {
			return
		}
	}
	resp := s.odata(r, svc, sub)
	s.log.Debug("sim: odata", "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery, "status", resp.status)
	resp.write(w)
}

func isServiceRoot(sub string) bool { return sub == "" || sub == "/" }

// odata computes the answer to one OData request under the lock.
func (s *Server) odata(r *http.Request, svc *service, sub string) response {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return s.errorResponse(svc, newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/004", "Request body could not be read"))
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := scheme + "://" + r.Host + servicePrefix + svc.name + "/"

	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		resp := s.read(r, svc, sub, base)
		if strings.EqualFold(r.Header.Get("X-CSRF-Token"), "Fetch") {
			s.issueToken(r, resp.header)
		}
		return resp
	}
	if !s.validToken(r) {
		resp := s.errorResponse(svc, newError(http.StatusForbidden, "/IWFND/CM_CSRF/001", "CSRF token validation failed"))
		resp.header.Set("X-CSRF-Token", "Required")
		return resp
	}
	if r.Method != http.MethodPost {
		return s.errorResponse(svc, newError(http.StatusMethodNotAllowed, "/IWBEP/CM_MGW_RT/003",
			fmt.Sprintf("Method %s is not supported for this resource", r.Method)))
	}
	return s.write(svc, sub, writeRequest{
		svc:   svc,
		query: r.URL.Query(),
		body:  body,
		base:  base,
	})
}

// errorResponse renders e in the current envelope form; svc is nil outside
// any service.
func (s *Server) errorResponse(svc *service, e *apiError) response {
	name, component := "", ""
	if svc != nil {
		name, component = svc.name, svc.component
	}
	s.formMu.RLock()
	form := s.form
	s.formMu.RUnlock()
	return e.envelope(form, name, component, s.opts.Now())
}

// read answers GET requests: the service document, $metadata, entity sets,
// single entities and navigation properties.
func (s *Server) read(r *http.Request, svc *service, sub, base string) response {
	segs, err := splitPath(sub)
	if err != nil {
		return s.errorResponse(svc, newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001", err.Error()))
	}
	if len(segs) == 0 {
		return jsonResponse(http.StatusOK, map[string]any{"d": map[string]any{"EntitySets": svc.setOrder}})
	}
	if len(segs) == 1 && segs[0] == "$metadata" {
		return metadata(svc)
	}
	name, keyText, hasKey := cutSegment(segs[0])
	set := svc.sets[name]
	if set == nil {
		if _, ok := svc.functions[name]; ok && len(segs) == 1 {
			return s.errorResponse(svc, newError(http.StatusMethodNotAllowed, "/IWBEP/CM_MGW_RT/003",
				fmt.Sprintf("Function import %s must be called with POST", name)))
		}
		return s.errorResponse(svc, resourceNotFound(segs[0], nil))
	}
	q := r.URL.Query()
	expand, err := parseExpand(q.Get("$expand"), set)
	if err != nil {
		return s.errorResponse(svc, newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001", err.Error()))
	}
	if !hasKey {
		if len(segs) > 1 {
			return s.errorResponse(svc, resourceNotFound(segs[1], nil))
		}
		return s.list(svc, set, set.rows(s.st), q, expand, base, sub)
	}
	key, err := parseKey(keyText, set)
	if err != nil {
		return s.errorResponse(svc, newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001", err.Error()))
	}
	row := findRow(set.rows(s.st), key)
	if row == nil {
		return s.errorResponse(svc, set.notFound(segs[0], key))
	}
	switch len(segs) {
	case 1:
		return jsonResponse(http.StatusOK, map[string]any{"d": s.render(svc, set, row, expand, base)})
	case 2:
		for _, n := range set.navs {
			if n.name == segs[1] {
				target := svc.sets[n.target]
				children := s.children(n, target, row)
				if n.single {
					if len(children) == 0 {
						return s.errorResponse(svc, resourceNotFound(segs[1], nil))
					}
					return jsonResponse(http.StatusOK, map[string]any{"d": s.render(svc, target, children[0], nil, base)})
				}
				return s.list(svc, target, children, q, nil, base, sub)
			}
		}
	}
	return s.errorResponse(svc, resourceNotFound(segs[len(segs)-1], nil))
}

// list answers a collection read with $filter, $skip, $top and
// $inlinecount applied, a page at a time: of a window longer than the page
// size it answers the page at $skiptoken with a __next link to the next
// one. sub is the collection's path below the service root.
func (s *Server) list(svc *service, set *entitySet, rows []obj, q url.Values, expand map[string]bool, base, sub string) response {
	bad := func(format string, args ...any) response {
		return s.errorResponse(svc, newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001", fmt.Sprintf(format, args...)))
	}
	if text := q.Get("$filter"); text != "" {
		f, err := parseFilter(text)
		if err == nil {
			err = f.check(set.template)
		}
		if err != nil {
			return bad("Invalid filter expression '%s': %v", text, err)
		}
		matched := rows[:0:0]
		for _, row := range rows {
			if f.match(row) {
				matched = append(matched, row)
			}
		}
		rows = matched
	}
	count := len(rows)
	if v := q.Get("$skip"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return bad("Invalid value '%s' for system query option $skip", v)
		}
		rows = rows[min(n, len(rows)):]
	}
	if v := q.Get("$top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return bad("Invalid value '%s' for system query option $top", v)
		}
		rows = rows[:min(n, len(rows))]
	}
	next := ""
	if size := s.opts.PageSize; size > 0 {
		offset := 0
		if v := q.Get("$skiptoken"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return bad("Invalid value '%s' for system query option $skiptoken", v)
			}
			offset = n
		}
		rows = rows[min(offset, len(rows)):]
		if len(rows) > size {
			rows = rows[:size]
			next = nextLink(base+escapePath(sub), q, offset+size)
		}
	}
	out := make([]obj, 0, len(rows))
	for _, row := range rows {
		out = append(out, s.render(svc, set, row, expand, base))
	}
	d := obj{}
	switch v := q.Get("$inlinecount"); v {
	case "", "none":
	case "allpages":
		d = append(d, field{"__count", strconv.Itoa(count)})
	default:
		return bad("Invalid value '%s' for system query option $inlinecount", v)
	}
	d = append(d, field{"results", out})
	if next != "" {
		d = append(d, field{"__next", next})
	}
	return jsonResponse(http.StatusOK, map[string]any{"d": d})
}

// escapePath percent-encodes a resource path as SAP writes it in links:
// key predicates keep their quotes, parentheses, commas and equals signs.
func escapePath(p string) string {
	const keep = "/'(),=;:@!$*+&-._~"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// nextLink is the absolute URL of the page of the collection at self that
// starts at skiptoken: the request's query options, sorted, with the new
// $skiptoken last.
func nextLink(self string, q url.Values, skiptoken int) string {
	esc := func(v string) string {
		return strings.ReplaceAll(strings.ReplaceAll(url.QueryEscape(v), "+", "%20"), "%24", "$")
	}
	var b strings.Builder
	b.WriteString(self)
	sep := byte('?')
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if k == "$skiptoken" {
			continue
		}
		for _, v := range q[k] {
			b.WriteByte(sep)
			b.WriteString(esc(k) + "=" + esc(v))
			sep = '&'
		}
	}
	b.WriteByte(sep)
	b.WriteString("$skiptoken=" + strconv.Itoa(skiptoken))
	return b.String()
}

// render adds __metadata and the navigation properties, expanded or
// deferred, to a row.
func (s *Server) render(svc *service, set *entitySet, row obj, expand map[string]bool, base string) obj {
	uri := base + set.name + keyPredicate(set, row)
	out := make(obj, 0, len(row)+1+len(set.navs))
	out = append(out, field{"__metadata", obj{{"id", uri}, {"uri", uri}, {"type", svc.name + "." + set.typ}}})
	out = append(out, row...)
	for _, n := range set.navs {
		if !expand[n.name] {
			out = append(out, field{n.name, deferred(uri + "/" + n.name)})
			continue
		}
		target := svc.sets[n.target]
		children := s.children(n, target, row)
		if n.single {
			// OData v2 expands a to-one navigation as the entity itself,
			// or null when there is none.
			var one any
			if len(children) > 0 {
				one = s.render(svc, target, children[0], nil, base)
			}
			out = append(out, field{n.name, one})
			continue
		}
		var kids results
		for _, c := range children {
			kids = append(kids, s.render(svc, target, c, nil, base))
		}
		out = append(out, field{n.name, kids})
	}
	return out
}

// children returns the rows of target that belong to parent; none when a
// join property of the parent is empty, as the supplier of a business
// partner without the supplier role.
func (s *Server) children(n nav, target *entitySet, parent obj) []obj {
	for _, j := range n.join {
		if parent.str(j) == "" {
			return nil
		}
	}
	var out []obj
	for _, c := range target.rows(s.st) {
		ok := true
		for _, j := range n.join {
			if !sameValue(j, c.str(j), parent.str(j)) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, c)
		}
	}
	return out
}

func findRow(rows []obj, key map[string]string) obj {
	for _, row := range rows {
		ok := true
		for k, v := range key {
			if !sameValue(k, row.str(k), v) {
				ok = false
				break
			}
		}
		if ok {
			return row
		}
	}
	return nil
}

// keyPredicate is the key part of an entity's URI, in SAP's short form for
// single keys.
func keyPredicate(set *entitySet, row obj) string {
	quote := func(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
	if len(set.keys) == 1 {
		return "(" + quote(row.str(set.keys[0])) + ")"
	}
	parts := make([]string, len(set.keys))
	for i, k := range set.keys {
		parts[i] = k + "=" + quote(row.str(k))
	}
	return "(" + strings.Join(parts, ",") + ")"
}

// splitPath splits the resource path into segments, leaving slashes inside
// quoted key values alone.
func splitPath(p string) ([]string, error) {
	var segs []string
	var cur strings.Builder
	inQuote := false
	for _, c := range p {
		switch {
		case c == '\'':
			inQuote = !inQuote
			cur.WriteRune(c)
		case c == '/' && !inQuote:
			if cur.Len() > 0 {
				segs = append(segs, cur.String())
			}
			cur.Reset()
		default:
			cur.WriteRune(c)
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated string literal in resource path")
	}
	if cur.Len() > 0 {
		segs = append(segs, cur.String())
	}
	return segs, nil
}

// cutSegment splits "Set(key)" into the name and the key text.
func cutSegment(seg string) (name, key string, hasKey bool) {
	i := strings.IndexByte(seg, '(')
	if i < 0 || !strings.HasSuffix(seg, ")") {
		return seg, "", false
	}
	return seg[:i], seg[i+1 : len(seg)-1], true
}

// parseKey reads a key predicate: 'v' for a single key or K='v',K2='v'.
func parseKey(text string, set *entitySet) (map[string]string, error) {
	parts, err := splitOutsideQuotes(text, ',')
	if err != nil {
		return nil, err
	}
	key := map[string]string{}
	if len(parts) == 1 && !strings.Contains(strings.SplitN(parts[0], "'", 2)[0], "=") {
		if len(set.keys) != 1 {
			return nil, fmt.Errorf("key predicate of %s needs the properties %s", set.name, strings.Join(set.keys, ", "))
		}
		v, err := unquote(parts[0])
		if err != nil {
			return nil, err
		}
		key[set.keys[0]] = v
		return key, nil
	}
	for _, p := range parts {
		k, raw, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("invalid key predicate '%s'", text)
		}
		v, err := unquote(raw)
		if err != nil {
			return nil, err
		}
		key[strings.TrimSpace(k)] = v
	}
	if len(key) != len(set.keys) {
		return nil, fmt.Errorf("key predicate of %s needs the properties %s", set.name, strings.Join(set.keys, ", "))
	}
	for _, k := range set.keys {
		if _, ok := key[k]; !ok {
			return nil, fmt.Errorf("key property %s missing in key predicate of %s", k, set.name)
		}
	}
	return key, nil
}

func splitOutsideQuotes(s string, sep rune) ([]string, error) {
	var parts []string
	var cur strings.Builder
	inQuote := false
	for _, c := range s {
		switch {
		case c == '\'':
			inQuote = !inQuote
			cur.WriteRune(c)
		case c == sep && !inQuote:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(c)
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated string literal in %q", s)
	}
	return append(parts, cur.String()), nil
}

// unquote reads an OData string literal; unquoted values are taken as
// they are, as the gateway does for numeric keys.
func unquote(v string) (string, error) {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'"), nil
	}
	if strings.Contains(v, "'") || v == "" {
		return "", fmt.Errorf("invalid literal %q", v)
	}
	return v, nil
}

// parseExpand reads $expand: navigation properties of set, comma
// separated.
func parseExpand(text string, set *entitySet) (map[string]bool, error) {
	out := map[string]bool{}
	if strings.TrimSpace(text) == "" {
		return out, nil
	}
	for _, p := range strings.Split(text, ",") {
		p = strings.TrimSpace(p)
		found := false
		for _, n := range set.navs {
			if n.name == p {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("Property %s not found in type %s", p, set.typ)
		}
		out[p] = true
	}
	return out, nil
}

// write dispatches a POST to a function import. Entity sets take no POST.
// A repeated call is answered as SAP answers it, by the document's state
// (a second Post is M8/255): SAP's published services declare no
// repeatability header.
func (s *Server) write(svc *service, sub string, w writeRequest) response {
	segs, err := splitPath(sub)
	if err != nil {
		return s.errorResponse(svc, newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001", err.Error()))
	}
	if len(segs) == 0 {
		return s.errorResponse(svc, newError(http.StatusMethodNotAllowed, "/IWBEP/CM_MGW_RT/003", "Method POST is not supported for the service document"))
	}
	name, _, hasKey := cutSegment(segs[0])
	var handler functionImport
	if fn, ok := svc.functions[name]; ok && !hasKey && len(segs) == 1 {
		handler = fn
	} else if svc.sets[name] != nil {
		return s.errorResponse(svc, newError(http.StatusMethodNotAllowed, "/IWBEP/CM_MGW_RT/003",
			fmt.Sprintf("Method POST is not supported for '%s'", sub)))
	} else {
		return s.errorResponse(svc, resourceNotFound(segs[0], nil))
	}
	resp, apiErr := handler(s, s.st, w)
	if apiErr != nil {
		resp = s.errorResponse(svc, apiErr)
	}
	return resp
}
