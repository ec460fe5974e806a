package sap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// receiptItemJSON is an A_MaterialDocumentItem as SAP sends it with
// $expand=to_MaterialDocumentHeader; header is the expanded value.
func receiptItemJSON(doc string, cancelled bool, qty, header string) string {
	return fmt.Sprintf(`{"__metadata":{"type":"API_MATERIAL_DOCUMENT_SRV.A_MaterialDocumentItemType"},
"MaterialDocumentYear":"2026","MaterialDocument":%q,"MaterialDocumentItem":"0001","GoodsMovementType":"101",
"PurchaseOrder":"4500018822","PurchaseOrderItem":"00010","EntryUnit":"EA","QuantityInEntryUnit":%q,
"GoodsMovementIsCancelled":%t,"to_MaterialDocumentHeader":%s}`, doc, qty, cancelled, header)
}

// receiptHeaderJSON is an expanded A_MaterialDocumentHeader.
func receiptHeaderJSON(doc string, posted int64) string {
	return fmt.Sprintf(`{"__metadata":{"type":"API_MATERIAL_DOCUMENT_SRV.A_MaterialDocumentHeaderType"},
"MaterialDocumentYear":"2026","MaterialDocument":%q,"DocumentDate":"/Date(%d)/","PostingDate":"/Date(%d)/"}`, doc, ms(2026, 11, 1), posted)
}

func TestGoodsReceipts(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Query().Get("$filter"), "'20'") {
			writeJSON(w, 200, list())
			return
		}
		writeJSON(w, 200, list(
			receiptItemJSON("4900000101", false, "10.000", receiptHeaderJSON("4900000101", ms(2026, 11, 18))),
			// A reversal the server failed to filter out: skipped, even
			// without its header.
			receiptItemJSON("4900000102", true, "5.000", `{"__deferred":{"uri":"x"}}`)))
	})
	c := f.client(Options{})
	got, err := c.GoodsReceipts(context.Background(), "4500018822", "10")
	if err != nil {
		t.Fatalf("GoodsReceipts: got error %v, want nil", err)
	}
	want := []erp.GoodsReceipt{{MaterialDocument: "4900000101", Year: "2026", Item: "1", POID: "4500018822", POItem: "10",
		Quantity: dec("10"), Unit: "EA", PostingDate: day(2026, 11, 18)}}
	same(t, "goods receipts", got, want)

	r := f.odata()[0]
	if r.path != mdPath+"A_MaterialDocumentItem" {
		t.Errorf("path: got %q, want %q", r.path, mdPath+"A_MaterialDocumentItem")
	}
	wantFilter := "PurchaseOrder eq '4500018822' and PurchaseOrderItem eq '10' and GoodsMovementType eq '101' and GoodsMovementIsCancelled eq false"
	if got := r.query["$filter"]; !slices.Equal(got, []string{wantFilter}) {
		t.Errorf("$filter: got %q, want %q", got, wantFilter)
	}
	if got := r.query["$expand"]; !slices.Equal(got, []string{"to_MaterialDocumentHeader"}) {
		t.Errorf("$expand: got %q, want to_MaterialDocumentHeader", got)
	}
	if len(f.odata()) != 1 {
		t.Errorf("requests: got %d, want 1: the header comes in the same answer", len(f.odata()))
	}

	none, err := c.GoodsReceipts(context.Background(), "4500018822", "20")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("no receipts: got %#v, %v, want an empty non-nil slice", none, err)
	}
}

// TestGoodsReceiptsWithoutHeaderDate checks that a receipt never gets a
// posting date its header does not give: an item's own PostingDate (SAP's
// item has none) is not read, and an item without the header's date is a
// record that cannot be read rather than dated 0001-01-01; with no other
// item beside it, the answer is bad data, never "no receipt".
func TestGoodsReceiptsWithoutHeaderDate(t *testing.T) {
	stray := strings.Replace(receiptItemJSON("4900000101", false, "10.000", receiptHeaderJSON("4900000101", ms(2026, 11, 18))),
		`"EntryUnit"`, fmt.Sprintf(`"PostingDate":"/Date(%d)/","EntryUnit"`, ms(2020, 1, 1)), 1)
	f := newFake(t, respond(200, list(stray)))
	got, err := f.client(Options{}).GoodsReceipts(context.Background(), "4500018822", "10")
	if err != nil || len(got) != 1 || !got[0].PostingDate.Equal(day(2026, 11, 18)) {
		t.Fatalf("item with a PostingDate of its own: got %+v, %v, want the header's 2026-11-18", got, err)
	}

	bad := []struct{ name, header string }{
		{"not expanded", `{"__deferred":{"uri":"https://s4/sap/opu/odata/sap/API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentItem(x)/to_MaterialDocumentHeader"}}`},
		{"null", `null`},
		{"no posting date", `{"MaterialDocumentYear":"2026","MaterialDocument":"4900000101"}`},
		{"another document", receiptHeaderJSON("4900000999", ms(2026, 11, 18))},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, respond(200, list(receiptItemJSON("4900000101", false, "10.000", tt.header))))
			got, err := f.client(Options{}).GoodsReceipts(context.Background(), "4500018822", "10")
			wantDataError(t, got, err, erp.ServiceMaterialDocument, erp.EntityGoodsReceipt,
				"MaterialDocumentYear='2026',MaterialDocument='4900000101',MaterialDocumentItem='0001'")
		})
	}
	// An item that is not expanded at all cannot be read either.
	f = newFake(t, respond(200, list(`{"MaterialDocumentYear":"2026","MaterialDocument":"4900000101",`+
		`"PurchaseOrder":"4500018822","PurchaseOrderItem":"10","GoodsMovementType":"101"}`)))
	got, err = f.client(Options{}).GoodsReceipts(context.Background(), "4500018822", "10")
	wantDataError(t, got, err, erp.ServiceMaterialDocument, erp.EntityGoodsReceipt,
		"MaterialDocumentYear='2026',MaterialDocument='4900000101'")
}

// wantDataError fails unless err is an answer of the service whose record
// of the entity with the key cannot be read, and got is empty.
func wantDataError[T any](t *testing.T, got []T, err error, svc erp.Service, entity erp.Entity, key string) {
	t.Helper()
	up, ok := errors.AsType[*erp.UpstreamError](err)
	de, isData := errors.AsType[*erp.DataError](err)
	if !ok || !isData || len(got) != 0 || up.Service != svc || up.Status != 200 {
		t.Fatalf("got %+v, %v, want a record of %s that cannot be read", got, err, svc)
	}
	if de.Service != svc || de.Entity != entity || de.Key != key || de.Err == nil {
		t.Errorf("got %+v, want %s %s %s", de, svc, entity, key)
	}
	if c := Classify(err, false); c != retry.Permanent {
		t.Errorf("classified %s, want permanent: the same answer would come again", c)
	}
}

// TestSimReceiptPostingDates reads every goods receipt of the golden set
// from the simulator, which serves A_MaterialDocumentItem and
// A_MaterialDocumentHeader as SAP declares them, and holds each posting
// date to the one on the document's header.
func TestSimReceiptPostingDates(t *testing.T) {
	srv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, Options{Runner: retry.New(oneAttempt(5*time.Second), nil)})
	if err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get(srv.URL + mdPath + "A_MaterialDocumentHeader")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	headers, err := decodeList[wireMaterialDocumentHeader](body)
	if err != nil || len(headers) == 0 {
		t.Fatalf("A_MaterialDocumentHeader: got %d headers, %v: %s", len(headers), err, body)
	}
	posted := map[string]time.Time{}
	for _, h := range headers {
		posted[h.MaterialDocumentYear+"/"+h.MaterialDocument] = h.PostingDate.Time
	}

	items := []struct {
		po, item string
		want     string // posting date
	}{
		{"4500018822", "10", "2026-11-18"},
		{"4500018823", "10", "2026-11-19"},
		{"4500018830", "10", "2026-11-20"},
		{"4500018840", "10", "2026-11-21"},
		{"4500018850", "10", "2026-11-22"},
		{"4500018860", "10", "2026-09-30"},
	}
	for _, it := range items {
		grs, err := c.GoodsReceipts(context.Background(), it.po, it.item)
		if err != nil || len(grs) != 1 {
			t.Errorf("GoodsReceipts(%s/%s): got %+v, %v, want one receipt", it.po, it.item, grs, err)
			continue
		}
		g := grs[0]
		h, ok := posted[g.Year+"/"+g.MaterialDocument]
		if !ok {
			t.Errorf("receipt %s %s: no header", g.MaterialDocument, g.Year)
			continue
		}
		if !g.PostingDate.Equal(h) || g.PostingDate.Format(time.DateOnly) != it.want {
			t.Errorf("receipt %s: posting date %s, header says %s, want %s", g.MaterialDocument,
				g.PostingDate.Format(time.DateOnly), h.Format(time.DateOnly), it.want)
		}
	}
}
