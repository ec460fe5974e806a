package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/erpgate/erpgate/errmap"
)

// pageNames are the templates beside layout.html and parts.html (what
// several pages show alike), one per page.
var pageNames = []string{"landing", "signin", "error", "handovers", "handover", "approvals", "holds", "runs", "health", "docs", "case"}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"json": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	},
	"compact": func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	},
	"lower": strings.ToLower,
	// invoiceID reports whether s is of the form of an invoice id, whose
	// case page a link may lead to.
	"invoiceID":    invoiceForm.MatchString,
	"approvalHref": approvalHref,
	"holdHref":     holdHref,
}

func parsePages() (map[string]*template.Template, error) {
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/parts.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// page is what the layout of every page reads.
type page struct {
	Title  string
	Nav    string  // the navigation entry of the page
	Person *person // nil when nobody is signed in
	CSRF   string  // the token of the page's forms
	Flash  string  // what the last form did
	// Waiting is the count of pending approvals the signed-in person may
	// decide, shown beside Approvals in the navigation; 0 shows none.
	Waiting int
	Data    any
}

func setPageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// render writes the page name with status, the signed-in person in the
// navigation and a CSRF token for its forms.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, pg page) {
	if pg.Person == nil {
		if p, ok := c.session(r); ok {
			pg.Person = &p
		}
	}
	var p person
	if pg.Person != nil {
		p = *pg.Person
	}
	pg.CSRF = c.csrfToken(w, r, p)
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, pg); err != nil {
		c.log.ErrorContext(r.Context(), "console page", "page", name, "error", err)
		http.Error(w, "The page could not be rendered; the log has the cause.", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// problem is a refusal shown to a person: the five fields of the
// gateway's error, and the HTTP status of the page.
type problem struct {
	Status     int
	Code       string
	Message    string
	Retryable  bool
	NextAction string
	Details    []detail
}

type detail struct{ Key, Value string }

// problemOf shows e with the status errmap gave it.
func problemOf(e *errmap.Error) problem {
	b := e.Body()
	return problem{Status: e.Status, Code: string(b.Code), Message: b.Message, Retryable: b.Retryable,
		NextAction: string(b.NextAction), Details: detailsOf(b.Details)}
}

// problemFromAPI shows the five-field body the API answered with status.
func problemFromAPI(status int, body []byte) problem {
	var b errmap.Body
	if err := json.Unmarshal(body, &b); err != nil || b.Code == "" {
		return problemOf(errmap.Map(fmt.Errorf("console: the API answered %d without an error body", status)))
	}
	return problem{Status: status, Code: string(b.Code), Message: b.Message, Retryable: b.Retryable,
		NextAction: string(b.NextAction), Details: detailsOf(b.Details)}
}

func detailsOf(m map[string]any) []detail {
	out := make([]detail, 0, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		out = append(out, detail{k, s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func (c *Console) fail(w http.ResponseWriter, r *http.Request, pr problem) {
	c.render(w, r, pr.Status, "error", page{Title: pr.Code, Data: pr})
}

func (c *Console) failAs(w http.ResponseWriter, r *http.Request, p person, pr problem) {
	c.render(w, r, pr.Status, "error", page{Title: pr.Code, Person: &p, Data: pr})
}

// notFoundError is the page of a path the console does not serve.
func notFoundError() problem {
	return problemOf(errmap.InvalidPage(http.StatusNotFound, "path", "names no page of the console"))
}
