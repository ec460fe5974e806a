package api_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
)

// TestFlatContract: /openapi.json is the contract as published, and
// /openapi.json?flat=1 the same contract with its references inlined.
func TestFlatContract(t *testing.T) {
	doc, err := openapi.JSON("")
	if err != nil {
		t.Fatal(err)
	}
	flat, err := openapi.Flat(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, func(o *api.Options, _ *retry.Policy, _ *sim.Options) { o.ContractJSON = doc })
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(s.gw.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return b
	}
	for _, c := range []struct {
		path string
		want []byte
	}{
		{"/openapi.json", doc},
		{"/openapi.json?flat=1", flat},
		{"/openapi.json?flat=0", doc},
		{"/openapi.json", doc},
	} {
		if got := get(c.path); !bytes.Equal(got, c.want) {
			t.Errorf("GET %s is not the expected document", c.path)
		}
	}
}
