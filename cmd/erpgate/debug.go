package main

import (
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// listenDebug serves the runtime's profiles (net/http/pprof) on a listener
// of their own, never on the API's: they show the gateway's internals and
// are for whoever runs it, on loopback or through kubectl port-forward.
// The caller serves the returned server on the listener and closes it.
func listenDebug(addr string) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// A CPU profile or a trace takes as long as it is asked to (30 s by
	// default): the write timeout leaves room for a few minutes.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 5 * time.Minute}
	return srv, ln, nil
}

// isLoopback reports whether addr is host:port with a loopback host.
func isLoopback(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
