package erp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/erpgate/erpgate/erp"
)

func TestGoodsReceiptReadsAtOnce(t *testing.T) {
	m := newMatchERP(1, true)
	m.together = 2
	po := m.inv.Lines[0].POID
	it, grs, err := erp.NewProcess(m, erp.ProcessOptions{Records: noRecords{}}).GoodsReceipt(context.Background(), po, "10")
	if err != nil || it.Item != "10" || len(grs) != 1 {
		t.Fatalf("GoodsReceipt: %+v %+v %v", it, grs, err)
	}
	if m.maxIn != 2 {
		t.Errorf("%d reads in flight at most, want the order and its receipts at once", m.maxIn)
	}
	if m.calls["po:"+po] != 1 || m.calls["gr:"+po+"/10"] != 1 || len(m.calls) != 2 {
		t.Errorf("reads %v, want the order and its receipts once each", m.calls)
	}
}

// TestGoodsReceiptJudgedInOrder: the answers are judged as if read one
// after the other: the order first, then the item, then the receipts.
func TestGoodsReceiptJudgedInOrder(t *testing.T) {
	down := errors.New("receipts unavailable")
	for _, tt := range []struct {
		name     string
		item     string
		setup    func(m *matchERP, po string)
		check    func(error) bool
		wantText string
	}{
		{"order missing, receipts failing", "10", func(m *matchERP, po string) {
			delete(m.orders, po)
			m.failRead["gr:"+po+"/10"] = down
		}, func(err error) bool {
			var nf *erp.NotFoundError
			return errors.As(err, &nf) && nf.Entity == erp.EntityPurchaseOrder
		}, "the order's not found"},
		{"item missing, receipts failing", "20", func(m *matchERP, po string) {
			m.failRead["gr:"+po+"/20"] = down
		}, func(err error) bool {
			var nf *erp.NotFoundError
			return errors.As(err, &nf) && nf.Entity == erp.EntityPOItem
		}, "the item's not found"},
		{"receipts failing", "10", func(m *matchERP, po string) {
			m.failRead["gr:"+po+"/10"] = down
		}, func(err error) bool { return errors.Is(err, down) }, "the receipts' failure"},
		{"no receipt", "10", func(m *matchERP, po string) {
			delete(m.receipts, po+"/10")
		}, func(err error) bool {
			var gm *erp.GRMissingError
			return errors.As(err, &gm)
		}, "GR missing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newMatchERP(1, true)
			po := m.inv.Lines[0].POID
			tt.setup(m, po)
			_, _, err := erp.NewProcess(m, erp.ProcessOptions{Records: noRecords{}}).GoodsReceipt(context.Background(), po, tt.item)
			if !tt.check(err) {
				t.Errorf("got %v, want %s", err, tt.wantText)
			}
		})
	}
}
