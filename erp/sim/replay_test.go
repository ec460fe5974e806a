package sim

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestReplayAsksOnce: every request gets the first one's answer, and the
// simulator is asked once however many requests come at once.
func TestReplayAsksOnce(t *testing.T) {
	var asked atomic.Int32
	inner := New(Options{})
	r := &Replay{sim: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		asked.Add(1)
		inner.ServeHTTP(w, req)
	})}
	url := "http://sap.invalid/sap/opu/odata/sap/API_SUPPLIERINVOICE_PROCESS_SRV/A_SupplierInvoice(SupplierInvoice='5105600101',FiscalYear='2026')"
	first := ""
	done := make(chan string, 8)
	for range 8 {
		go func() {
			resp, err := r.RoundTrip(httptest.NewRequest(http.MethodGet, url, nil))
			if err != nil {
				done <- "error: " + err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			done <- resp.Status + string(b)
		}()
	}
	for range 8 {
		got := <-done
		if first == "" {
			first = got
		}
		if got != first || len(got) < 100 {
			t.Fatalf("answers differ or are empty:\n%.200s\n%.200s", first, got)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the simulator was asked %d times", n)
	}
}
