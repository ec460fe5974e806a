package console_test

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/erpgate/erpgate/openapi"
)

// opSection is an operation's section of /docs.
var opSection = regexp.MustCompile(`(?s)<section class="op" aria-labelledby="([a-z_]+)">(.*?)</section>`)

// contractOps are the operations of the agents' contract and of the
// people's, each with whether it is one of the people's.
func contractOps(t *testing.T) map[string]struct {
	op     *openapi3.Operation
	people bool
} {
	t.Helper()
	out := map[string]struct {
		op     *openapi3.Operation
		people bool
	}{}
	agents, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	people, err := openapi.LoadPeople()
	if err != nil {
		t.Fatal(err)
	}
	for i, doc := range []*openapi3.T{agents, people} {
		if doc == nil {
			continue
		}
		for _, item := range doc.Paths.Map() {
			for _, op := range item.Operations() {
				out[op.OperationID] = struct {
					op     *openapi3.Operation
					people bool
				}{op, i == 1 || fmt.Sprint(op.Extensions["x-erpgate-audience"]) == "people"}
			}
		}
	}
	return out
}

// TestDocsShowScopesAndResponseBodies checks that /docs shows every
// operation of both contracts with the scope its x-erpgate-scope names, the
// people's apart from the agents', and for each success response the
// fields of its body, nested ones by their path.
func TestDocsShowScopesAndResponseBodies(t *testing.T) {
	s := newSite(t)
	p := s.browser().get("/docs")
	if p.status != http.StatusOK {
		t.Fatalf("/docs: %d", p.status)
	}
	peopleAt := strings.Index(p.body, `<h2 id="people">`)
	errorsAt := strings.Index(p.body, `<h2 id="errors">`)
	if peopleAt < 0 || errorsAt < peopleAt {
		t.Fatalf("/docs has no part for the people's operations before the errors (at %d, %d)", peopleAt, errorsAt)
	}
	sections := map[string]string{}
	where := map[string]int{}
	for _, m := range opSection.FindAllStringSubmatchIndex(p.body, -1) {
		id := p.body[m[2]:m[3]]
		sections[id], where[id] = p.body[m[4]:m[5]], m[0]
	}
	ops := contractOps(t)
	if len(ops) == 0 {
		t.Fatal("the contracts hold no operations")
	}
	for id, o := range ops {
		section, ok := sections[id]
		if !ok {
			t.Errorf("/docs has no section for %s", id)
			continue
		}
		scope, _ := o.op.Extensions["x-erpgate-scope"].(string)
		if scope == "" {
			t.Errorf("%s: the contract names no x-erpgate-scope", id)
		} else if want := "Needs the scope <code>" + scope + "</code>"; !strings.Contains(section, want) {
			t.Errorf("%s: its section lacks %q", id, want)
		}
		if people := where[id] > peopleAt; people != o.people {
			t.Errorf("%s: shown among the people's operations %v, want %v", id, people, o.people)
		}
		for _, status := range o.op.Responses.Keys() {
			r := o.op.Responses.Value(status)
			if !strings.HasPrefix(status, "2") || r == nil || r.Value == nil {
				continue
			}
			mt := r.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				continue
			}
			for _, name := range fieldPaths(mt.Schema.Value, "", 2) {
				if !strings.Contains(section, "<code>"+name+"</code>") {
					t.Errorf("%s: the fields of its %s body lack %s", id, status, name)
				}
			}
		}
	}
	// A nested field, by its path, with its type and whether it is required.
	if !regexp.MustCompile(`<code>lines\[\]\.po_id</code> <span class="type">string</span> <span class="req">required</span>`).MatchString(sections["get_invoice"]) {
		t.Error("get_invoice's 200 body does not show lines[].po_id as a required string")
	}
	if !regexp.MustCompile(`<strong>404</strong>: [^<]*</p>\s*<p>Body: <a href="#error-body">an error's five fields</a>; codes [^\n]*<code>INVOICE_NOT_FOUND</code>`).MatchString(sections["get_invoice"]) {
		t.Error("get_invoice's 404 does not lead to the error body with its code")
	}
	errorsPart := p.body[errorsAt:]
	for _, field := range []string{"code", "message", "retryable", "next_action", "details", "details.invoice_id"} {
		if !strings.Contains(errorsPart, "<code>"+field+"</code>") {
			t.Errorf("the error body lacks %s", field)
		}
	}
}

// fieldPaths lists the paths of the fields of schema s down to depth,
// as /docs names them (lines[].po_id).
func fieldPaths(s *openapi3.Schema, prefix string, depth int) []string {
	var out []string
	for name, ref := range s.Properties {
		if ref == nil || ref.Value == nil {
			continue
		}
		path := prefix + name
		out = append(out, path)
		if depth > 1 {
			if len(ref.Value.Properties) > 0 {
				out = append(out, fieldPaths(ref.Value, path+".", depth-1)...)
			} else if it := ref.Value.Items; it != nil && it.Value != nil && len(it.Value.Properties) > 0 {
				out = append(out, fieldPaths(it.Value, path+"[].", depth-1)...)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestDocsShowAuthentication checks the authentication part of /docs: the
// contract's two security schemes with their descriptions as written (the
// <key> of "Bearer <key>" kept as text), OAuth access tokens, the keyless
// mode, and each scope with the operations that need it.
func TestDocsShowAuthentication(t *testing.T) {
	s := newSite(t)
	body := s.browser().get("/docs").body
	start, end := strings.Index(body, `<h2 id="authentication">`), strings.Index(body, `<h2 id="operations">`)
	if start < 0 || end < start {
		t.Fatalf("/docs has no authentication part before the operations (at %d, %d)", start, end)
	}
	auth := body[start:end]
	for _, want := range []string{
		"<code>bearer_auth</code>: HTTP header Authorization: Bearer &lt;credential&gt;",
		"<code>api_key</code>: API key in the header X-API-Key",
		"&quot;Authorization: Bearer &lt;key&gt;&quot;",
		"OAuth access tokens", "<code>-oauth-issuer</code>",
		"Keyless mode", "the agent <code>anonymous</code>", "demonstration people",
		"<code>UNAUTHENTICATED</code> (401)", "<code>SCOPE_MISSING</code> (409",
	} {
		if !strings.Contains(auth, want) {
			t.Errorf("the authentication part lacks %q", want)
		}
	}
	scopes := regexp.MustCompile(`(?s)<dt><code>([a-z]+)</code></dt>\s*<dd>(.*?)</dd>`).FindAllStringSubmatch(auth, -1)
	listed := map[string]string{}
	for _, m := range scopes {
		listed[m[1]] = m[2]
	}
	for id, o := range contractOps(t) {
		scope, _ := o.op.Extensions["x-erpgate-scope"].(string)
		if !strings.Contains(listed[scope], `<a href="#`+id+`"><code>`+id+`</code></a>`) {
			t.Errorf("scope %q does not list %s", scope, id)
		}
	}
}

// TestWideTablesScrollInTheirOwnBox checks the style sheet's rules for
// phones and that every table of the pages that hold the widest sits in a
// box that scrolls by itself, one a keyboard can reach and a screen reader
// names.
func TestWideTablesScrollInTheirOwnBox(t *testing.T) {
	s := newSite(t)
	b := s.browser()
	css := b.get("/console/static/console.css")
	if css.status != http.StatusOK {
		t.Fatalf("console.css: %d", css.status)
	}
	for _, want := range []string{"@media (max-width: 40rem)", ".scroll { max-width: 100%; overflow-x: auto;", "overflow-wrap: anywhere"} {
		if !strings.Contains(css.body, want) {
			t.Errorf("console.css lacks %q", want)
		}
	}
	b.signIn(kellerKey)
	// The README's run-0042: two matches of 5105600103 and its handover.
	s.agent(http.MethodPost, "/invoices/5105600103/three-way-match", "", "run-0042")
	s.agent(http.MethodPost, "/invoices/5105600103/three-way-match", "", "run-0042")
	ho := s.agent(http.MethodPost, "/handovers", `{"invoice_id":"5105600103","code":"PO_NOT_FOUND","summary":"PO 4500019822 does not exist."}`, "run-0042")
	m := regexp.MustCompile(`"handover_id":"([A-Z0-9]+)"`).FindStringSubmatch(ho.body)
	if ho.status != http.StatusOK || m == nil {
		t.Fatalf("hand_over: %d %s", ho.status, ho.body)
	}
	wrapped := regexp.MustCompile(`<div class="scroll" role="region" aria-label="[^"]+" tabindex="0">\s*<table`)
	for _, path := range []string{"/docs", "/console/handovers", "/console/handovers/" + m[1], "/console/holds",
		"/console/runs?run_id=run-0042", "/console/health", "/console/cases/5105600103"} {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Errorf("GET %s: %d", path, p.status)
			continue
		}
		tables := strings.Count(p.body, "<table")
		if tables == 0 {
			t.Errorf("GET %s: no table", path)
		}
		if n := len(wrapped.FindAllString(p.body, -1)); n != tables {
			t.Errorf("GET %s: %d of %d tables in a scrolling box", path, n, tables)
		}
	}
}
