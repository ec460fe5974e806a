// Package console is the person's side of the gateway: server-rendered
// pages where approvers decide pending approvals and the AP team works the
// handovers agents left, beside the holds, each invoice's case with its
// history, the runs and the gateway's health; and /docs, the API
// reference rendered from the embedded contract. Templates and the style
// sheet are embedded in the binary; nothing is loaded from another site,
// and the pages work without JavaScript.
//
// A person signs in with an API key that carries the approve, review or
// audit scope; an agent's key carries none of them and cannot sign in. The
// session is kept in the records store, its token in a signed cookie
// (session.go), so that any replica sharing the store serves it and
// signing out ends it on all of them. Decisions go through the gateway's own
// decide_approval operation (api.Server.ServeAs), with its scope check,
// audit row and segregation of duties; the console decides nothing itself.
package console

import (
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/openapi"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/console.css
var styleSheet []byte

// Gateway is what the console asks of the API server (api.Server): the
// person behind a key, and requests served as that person.
type Gateway interface {
	// SignIn returns the client whose API key is key; a wrong key counts
	// against r's source address as a failed authentication at the API
	// does, and is RATE_LIMITED once the address's failures are spent.
	SignIn(r *http.Request, key string) (api.Credential, error)
	// ClientNamed returns the configured client named name.
	ClientNamed(name string) (api.Credential, bool)
	// ServeAs serves r through the API's router as the client named name.
	ServeAs(w http.ResponseWriter, r *http.Request, name string)
	// RunJSON returns a run's history as GET /runs/{run_id} answers it.
	RunJSON(ctx context.Context, id string) ([]byte, bool, error)
	// InvoiceEvidence reads what the ERP holds of an invoice for a person
	// deciding on it, counting in no run and writing nothing.
	InvoiceEvidence(ctx context.Context, invoiceID string) (api.Evidence, error)
}

// Options configures a Console. Gateway and Records are required; every
// other zero field takes the default documented beside it.
type Options struct {
	Gateway Gateway
	// Records are the gateway's records: the handovers, approvals and
	// holds the pages list, and the audit log.
	Records records.Store
	// Metrics, when set, gives the health page its retry figures.
	// Default: none shown.
	Metrics prometheus.Gatherer
	// Contract is the agents' contract /docs shows. Default:
	// openapi.Load().
	Contract *openapi3.T
	// PeopleContract is the people's contract /docs shows as a part of its
	// own. Default: openapi.LoadPeople().
	PeopleContract *openapi3.T
	// Secret signs the session cookies and the forms' CSRF tokens; at
	// least MinSecretBytes. Replicas behind one load balancer need the same
	// secret. Default: random, made at New, so sessions end when the
	// process does and hold on this replica only.
	Secret []byte
	// SessionTTL is how long a session lasts after sign-in. Default 8h.
	SessionTTL time.Duration
	// PublicURL is the URL people reach the gateway at (-public-url). When
	// it is https every cookie is Secure, also behind a proxy that
	// terminates TLS and forwards plain HTTP. Default: Secure on a request
	// that came over TLS, or through TrustedProxies saying so.
	PublicURL string
	// TrustedProxies are the reverse proxies (-trusted-proxies) whose
	// X-Forwarded-Proto: https makes the cookies Secure; the header of any
	// other peer is ignored. Default: none.
	TrustedProxies []netip.Prefix
	// PageSize is the rows of a list page. Default 25.
	PageSize int
	// Logger receives the console's failures. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// MinSecretBytes is the shortest Options.Secret New takes.
const MinSecretBytes = 32

// DefaultSessionTTL is the session lifetime when Options leaves it zero.
const DefaultSessionTTL = 8 * time.Hour

// Console serves the console's pages and /docs.
type Console struct {
	gw       Gateway
	records  records.Store
	metrics  prometheus.Gatherer
	secret   []byte
	ttl      time.Duration
	pageSize int
	log      *slog.Logger
	now      func() time.Time
	pages    map[string]*template.Template
	docs     []byte // /docs, rendered once at New

	// secureAlways and trustedProxies: see Console.secure.
	secureAlways   bool
	trustedProxies []netip.Prefix
}

// New returns the console over opts.
func New(opts Options) (*Console, error) {
	if opts.Gateway == nil || opts.Records == nil {
		return nil, errors.New("console: Options.Gateway and Options.Records are required")
	}
	c := &Console{gw: opts.Gateway, records: opts.Records, metrics: opts.Metrics,
		ttl: cmp.Or(opts.SessionTTL, DefaultSessionTTL), pageSize: cmp.Or(opts.PageSize, 25),
		log: opts.Logger, now: opts.Now, trustedProxies: opts.TrustedProxies}
	if opts.PublicURL != "" {
		u, err := url.Parse(opts.PublicURL)
		if err != nil {
			return nil, fmt.Errorf("console: Options.PublicURL: %w", err)
		}
		c.secureAlways = strings.EqualFold(u.Scheme, "https")
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.now == nil {
		c.now = time.Now
	}
	switch {
	case len(opts.Secret) == 0:
		c.secret = make([]byte, MinSecretBytes)
		_, _ = rand.Read(c.secret)
	case len(opts.Secret) < MinSecretBytes:
		return nil, fmt.Errorf("console: the secret must be at least %d bytes", MinSecretBytes)
	default:
		c.secret = append([]byte(nil), opts.Secret...)
	}
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	agents, people := opts.Contract, opts.PeopleContract
	if agents == nil {
		if agents, err = openapi.Load(); err != nil {
			return nil, err
		}
	}
	if people == nil {
		if people, err = openapi.LoadPeople(); err != nil {
			return nil, err
		}
	}
	if c.docs, err = c.renderDocs(agents, people); err != nil {
		return nil, fmt.Errorf("console: /docs: %w", err)
	}
	return c, nil
}

// Mount adds the console's routes to mux, beside the API's "/": the landing
// page at exactly "/", /docs (with /redoc and /swagger-ui sent there), and
// everything below /console. Owns names these paths.
func (c *Console) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", c.landing)
	mux.HandleFunc("GET /docs", c.serveDocs)
	for _, p := range []string{"/redoc", "/swagger-ui", "/swagger-ui/"} {
		mux.Handle("GET "+p, http.RedirectHandler("/docs", http.StatusFound))
	}
	mux.HandleFunc("GET /console/static/console.css", serveStyle)
	mux.HandleFunc("GET /console", c.home)
	mux.HandleFunc("GET /console/{$}", c.home)
	mux.HandleFunc("GET /console/sign-in", c.signInPage)
	mux.HandleFunc("POST /console/sign-in", c.form(c.signIn))
	mux.HandleFunc("POST /console/sign-out", c.form(c.signOut))

	mux.HandleFunc("GET /console/handovers", c.person(api.ScopeReview, c.handovers))
	mux.HandleFunc("GET /console/handovers/{id}", c.person(api.ScopeReview, c.handover))
	mux.HandleFunc("POST /console/handovers/{id}/take", c.form(c.person(api.ScopeReview, c.takeHandover)))
	mux.HandleFunc("POST /console/handovers/{id}/resolve", c.form(c.person(api.ScopeReview, c.resolveHandover)))
	mux.HandleFunc("GET /console/approvals", c.person(api.ScopeApprove, c.approvals))
	mux.HandleFunc("GET /console/approvals/{id}", c.person(api.ScopeApprove, c.approval))
	mux.HandleFunc("POST /console/approvals/{id}/decision", c.form(c.person(api.ScopeApprove, c.decide)))
	mux.HandleFunc("GET /console/holds", c.person("", c.holds))
	mux.HandleFunc("GET /console/cases/{invoice_id}", c.person("", c.caseView))
	mux.HandleFunc("GET /console/runs", c.person("", c.runs))
	mux.HandleFunc("GET /console/health", c.person("", c.health))
	mux.HandleFunc("GET /console/audit", c.person(api.ScopeAudit, c.auditPage))
	mux.HandleFunc("GET /console/audit.csv", c.person(api.ScopeAudit, c.auditCSV))
	mux.HandleFunc("/console/", c.notFound)
}

// Owns reports whether a clean path is one of Mount's routes, for any
// method: a path it does not own, the mux hands to the API's "/".
func Owns(path string) bool {
	switch path {
	case "/", "/docs", "/redoc", "/swagger-ui", "/console":
		return true
	}
	return strings.HasPrefix(path, "/swagger-ui/") || strings.HasPrefix(path, "/console/")
}

func serveStyle(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(styleSheet)
}

func (c *Console) landing(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "landing", page{Title: "erpgate"})
}

func (c *Console) serveDocs(w http.ResponseWriter, _ *http.Request) {
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(c.docs)
}

// home sends a signed-in person to the first page their scopes open (the
// handovers for review, the approvals for approve, the audit log for
// audit), and anyone else to the sign-in.
func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	p, ok := c.session(r)
	switch {
	case !ok:
		http.Redirect(w, r, "/console/sign-in", http.StatusSeeOther)
	case p.Has(api.ScopeReview):
		http.Redirect(w, r, "/console/handovers", http.StatusSeeOther)
	case p.Has(api.ScopeApprove):
		http.Redirect(w, r, "/console/approvals", http.StatusSeeOther)
	default:
		http.Redirect(w, r, "/console/audit", http.StatusSeeOther)
	}
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.fail(w, r, notFoundError())
}
