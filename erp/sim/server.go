// Package sim is a simulated SAP S/4HANA system. It speaks the OData v2
// subset the gateway's SAP adapter uses over real HTTP: SAP's supplier
// invoice, purchase order, material document and business partner APIs,
// with CSRF tokens, both error envelope forms and the sap-message warning
// header; a repeated write is answered by the document's state, as SAP's
// published services declare no repeatability header. It serves no service, entity set or
// function import that SAP does not publish. It starts seeded with the
// golden set and offers admin endpoints under /sim/admin/ to post goods
// receipts, inject faults, expire CSRF tokens, switch the envelope form and
// read the ledger of postings.
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is a simulated SAP system; it is an http.Handler and safe for
// concurrent use.
type Server struct {
	opts     Options
	log      *slog.Logger
	services map[string]*service
	mux      *http.ServeMux

	formMu sync.RWMutex
	form   string // envelope form for error bodies

	mu       sync.Mutex
	st       *state
	sessions map[string]string // session id -> CSRF token; "" when expired
	faults   []*activeFault

	callsMu sync.Mutex
	calls   []Call // see Calls
}

// New returns a Server seeded with the golden set. It panics when opts name
// an unknown envelope form or hold an invalid fault rule, which are
// programming errors.
func New(opts Options) *Server {
	o, err := opts.withDefaults()
	if err != nil {
		panic(err)
	}
	s := &Server{
		opts:     o,
		log:      o.Logger,
		services: services(),
		form:     o.Envelope,
		st:       seed(),
		sessions: map[string]string{},
	}
	for _, f := range o.Faults {
		s.faults = append(s.faults, newActiveFault(f))
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sim/admin/faults", s.adminListFaults)
	mux.HandleFunc("POST /sim/admin/faults", s.adminAddFault)
	mux.HandleFunc("DELETE /sim/admin/faults", s.adminClearFaults)
	mux.HandleFunc("POST /sim/admin/csrf/expire", s.adminExpireTokens)
	mux.HandleFunc("GET /sim/admin/ledger", s.adminLedger)
	mux.HandleFunc("POST /sim/admin/goods-receipts", s.adminGoodsReceipt)
	mux.HandleFunc("GET /sim/admin/envelope", s.adminEnvelope)
	mux.HandleFunc("POST /sim/admin/envelope", s.adminEnvelope)
	mux.HandleFunc("/sim/admin/", func(w http.ResponseWriter, r *http.Request) {
		adminError(w, http.StatusNotFound, fmt.Sprintf("no admin endpoint %s %s", r.Method, r.URL.Path))
	})
	mux.HandleFunc(servicePrefix, s.serveOData)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.errorResponse(nil, newError(http.StatusNotFound, "/IWFND/CM_CONSUMER/404",
			fmt.Sprintf("No service is published at '%s'", r.URL.Path))).write(w)
	})
	s.mux = mux
}

// ServeHTTP serves the OData services and the admin endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// SetEnvelope switches the form of error bodies: EnvelopeV2, EnvelopeV2Detail
// or EnvelopeV4.
func (s *Server) SetEnvelope(form string) error {
	if !validEnvelope(form) {
		return fmt.Errorf("sim: unknown envelope form %q", form)
	}
	s.formMu.Lock()
	defer s.formMu.Unlock()
	s.form = form
	return nil
}

// Envelope returns the current form of error bodies.
func (s *Server) Envelope() string {
	s.formMu.RLock()
	defer s.formMu.RUnlock()
	return s.form
}

// Start listens on addr (such as "127.0.0.1:0") and serves in a goroutine.
// It returns the base URL and a shutdown function that ends hanging faults
// and waits for other requests to finish until ctx is done.
func (s *Server) Start(addr string) (url string, shutdown func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	// Hanging faults end when the base context does; cancelling it only
	// once the listener is closed keeps clients from retrying into a
	// server that still accepts.
	srv.RegisterOnShutdown(cancel)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("sim: serve", "err", err)
		}
	}()
	shutdown = func(ctx context.Context) error {
		defer cancel()
		return srv.Shutdown(ctx)
	}
	return "http://" + ln.Addr().String(), shutdown, nil
}
