// Command goproxy is the Go standard library's reverse proxy and nothing
// else, in front of the URL given as its argument: loadbench runs it as the
// floor any Go gateway built on net/http starts from, beside nginx and
// erpgate. It prints "listening on http://ADDR" once it accepts
// connections.
//
// Usage:
//
//	goproxy [-addr 127.0.0.1:0] URL
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: goproxy [-addr 127.0.0.1:0] URL")
		os.Exit(2)
	}
	if err := serve(*addr, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "goproxy:", err)
		os.Exit(1)
	}
}

// serve proxies every request to upstream with as many idle upstream
// connections as erpgate's SAP client keeps, so that neither redials.
func serve(addr, upstream string) error {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("upstream %q is not an absolute URL", upstream)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns = 128
	transport.MaxIdleConnsPerHost = 128
	proxy.Transport = transport
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	return http.Serve(ln, proxy)
}
