package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/erpgate/erpgate/errmap"
)

// pageNames are the templates beside layout.html and parts.html (what
// several pages show alike), one per page.
var pageNames = []string{"landing", "signin", "error", "handovers", "handover", "approvals", "approval", "holds", "runs", "health", "docs", "case", "audit"}

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
	pg.Waiting = c.waiting(r.Context(), pg.Person)
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

// problem is a refusal shown to a person: a heading and a sentence in
// their words, the way back, and, for support, the five fields of the
// gateway's error and the HTTP status of the page.
type problem struct {
	Status     int
	Code       string
	Message    string
	Retryable  bool
	NextAction string
	Details    []detail
	// Heading and Sentence say what happened and what to do; explain
	// fills them from the code when they are empty.
	Heading, Sentence string
	// Back and BackLabel lead back: to the console page the person came
	// from when the browser says so, else to the console.
	Back, BackLabel string
	// retryAfter is the Retry-After header of the page; "" for none.
	retryAfter string
}

type detail struct{ Key, Value string }

// problemOf shows e with the status errmap gave it.
func problemOf(e *errmap.Error) problem {
	b := e.Body()
	return problem{Status: e.Status, Code: string(b.Code), Message: b.Message, Retryable: b.Retryable,
		NextAction: string(b.NextAction), Details: detailsOf(b.Details), retryAfter: retryAfterOf(b)}
}

// problemFromAPI shows the five-field body the API answered with status.
func problemFromAPI(status int, body []byte) problem {
	var b errmap.Body
	if err := json.Unmarshal(body, &b); err != nil || b.Code == "" {
		return problemOf(errmap.Map(fmt.Errorf("console: the API answered %d without an error body", status)))
	}
	return problem{Status: status, Code: string(b.Code), Message: b.Message, Retryable: b.Retryable,
		NextAction: string(b.NextAction), Details: detailsOf(b.Details), retryAfter: retryAfterOf(b)}
}

// retryAfterOf is the Retry-After of a retryable error with
// details.retry_after_s, as errmap.Write sends it.
func retryAfterOf(b errmap.Body) string {
	if v, ok := b.Details["retry_after_s"]; ok && b.Retryable {
		return fmt.Sprint(v)
	}
	return ""
}

// detail returns the value of the detail key, or "".
func (pr problem) detail(key string) string {
	for _, d := range pr.Details {
		if d.Key == key {
			return d.Value
		}
	}
	return ""
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
	p, ok := c.session(r)
	var pp *person
	if ok {
		pp = &p
	}
	c.showProblem(w, r, pp, pr)
}

func (c *Console) failAs(w http.ResponseWriter, r *http.Request, p person, pr problem) {
	c.showProblem(w, r, &p, pr)
}

// showProblem renders the error page of pr with its status, explained in
// a person's words, with a Retry-After when the refusal has one.
func (c *Console) showProblem(w http.ResponseWriter, r *http.Request, p *person, pr problem) {
	explain(&pr, r.URL.Path)
	if pr.Back == "" {
		pr.Back, pr.BackLabel = backLink(r, p != nil)
	}
	if pr.retryAfter != "" {
		w.Header().Set("Retry-After", pr.retryAfter)
	}
	c.render(w, r, pr.Status, "error", page{Title: pr.Heading, Person: p, Data: pr})
}

// backLink leads back to the console page r came from, when the browser
// named one (Referer, same origin), else to the console or its sign-in.
func backLink(r *http.Request, signedIn bool) (href, label string) {
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Host == r.Host {
		next := safeNext(ref.RequestURI())
		switch {
		case next == "" || (r.Method == http.MethodGet && ref.Path == r.URL.Path):
		case ref.Path == "/console/sign-in":
			return next, "Back to the sign-in"
		default:
			return next, "Back to the page you came from"
		}
	}
	if signedIn {
		return "/console", "Back to the console"
	}
	return "/console/sign-in", "Sign in"
}

// fieldLabels are the names a person knows the fields of the console's
// forms and filters by.
var fieldLabels = map[string]string{
	"key": "API key", "note": "Resolution note", "reason": "Reason", "decision": "Decision",
	"invoice_id": "Invoice", "client": "Client", "operation": "Operation", "from": "From", "to": "To",
	"status": "Status", "queue": "Queue", "run_id": "Run", "after": "Page", "before": "Page", "form": "Form",
}

func fieldLabel(field string) string {
	if l, ok := fieldLabels[field]; ok {
		return l
	}
	return field
}

// explain fills pr's heading and sentence, unless set, from its code: what
// happened and what the person can do, in their words. path is the page
// that was asked for.
func explain(pr *problem, path string) {
	if pr.Heading != "" {
		return
	}
	signIn := path == "/console/sign-in"
	switch pr.Code {
	case string(errmap.Unauthenticated):
		if signIn {
			pr.Heading, pr.Sentence = "That key was not accepted",
				"Check the API key and sign in again. If you have no key, or yours stopped working, ask whoever runs the gateway."
		} else {
			pr.Heading, pr.Sentence = "You are not signed in",
				"Your session ended or was signed out. Sign in again, then repeat what you were doing."
		}
	case string(errmap.ScopeMissing):
		if signIn {
			pr.Heading, pr.Sentence = "This key cannot sign in to the console",
				"The console is for people: a key with the approve, review or audit scope signs in. This key is an agent's."
		} else {
			pr.Heading, pr.Sentence = "Your key does not open this page",
				"This page needs the "+pr.detail("scope")+" scope, which your key does not carry. Ask whoever runs the gateway if you should have it."
		}
	case string(errmap.RateLimited):
		wait := pr.detail("retry_after_s")
		if wait == "" {
			wait = "a few"
		}
		pr.Heading = "Too many attempts: try again in " + wait + " seconds"
		if pr.detail("reason") == "auth_failures" {
			pr.Sentence = "Too many wrong keys came from your address. Wait " + wait + " seconds, then sign in with the right key."
		} else {
			pr.Sentence = "Wait " + wait + " seconds, then try again."
		}
	case string(errmap.InvalidRequest):
		explainInvalid(pr)
	case string(errmap.SegregationOfDuties):
		pr.Heading, pr.Sentence = "You cannot decide your own request",
			"You asked for this approval yourself, so another approver must decide it."
	case string(errmap.ApprovalDecided):
		pr.Heading, pr.Sentence = "This approval was decided already",
			"Someone decided it before your decision arrived. Open the approvals again to see the decision."
	case string(errmap.ApprovalSuperseded):
		pr.Heading, pr.Sentence = "This approval was replaced by a newer one",
			"The agent asked again after this request. Decide the newer approval instead."
	case string(errmap.ApprovalSentBack):
		pr.Heading, pr.Sentence = "This approval was sent back to the agent",
			"It waits for the agent's answer: there is nothing to decide until the agent asks again."
	case string(errmap.ERPUnavailable):
		pr.Heading, pr.Sentence = "The ERP is not answering",
			"Nothing was changed. Try again in a minute."
	case string(errmap.Internal):
		pr.Heading, pr.Sentence = "Something went wrong in the gateway",
			"It was not caused by what you did. Try again; if it happens again, tell support the code below and the time."
	default:
		pr.Heading, pr.Sentence = "This could not be done", pr.Message
	}
}

// explainInvalid explains an INVALID_REQUEST by the field it names.
func explainInvalid(pr *problem) {
	field := pr.detail("field")
	// The message says `Field "name" <what is wrong>.`: the person reads
	// the field by its label and what is wrong.
	what := strings.TrimPrefix(pr.Message, fmt.Sprintf("Field %q ", field))
	if what == pr.Message {
		what = ""
	}
	label := fieldLabel(field)
	switch {
	case field == csrfField:
		pr.Heading, pr.Sentence = "This form has expired",
			"The page was open too long, or you signed in again since. Reload the page and send the form again."
	case field == "path":
		pr.Heading, pr.Sentence = "There is no such page", "Check the address, or go back."
	case pr.Status == http.StatusNotFound && strings.HasSuffix(field, "_id"):
		pr.Heading, pr.Sentence = "There is no such "+strings.TrimSuffix(field, "_id"), "Check the link, or find it in its list."
	case pr.Status == http.StatusConflict:
		pr.Heading = "This cannot be done now"
		pr.Sentence = label + " " + what
	case what != "":
		pr.Heading, pr.Sentence = "Check “"+label+"”", label+" "+what
	default:
		pr.Heading, pr.Sentence = "This request was not accepted", pr.Message
	}
	if pr.Sentence == label+" " {
		pr.Sentence = pr.Message
	}
}

// notFoundError is the page of a path the console does not serve.
func notFoundError() problem {
	return problemOf(errmap.InvalidPage(http.StatusNotFound, "path", "names no page of the console"))
}
