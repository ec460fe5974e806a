package sim

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// Errors PostGoodsReceipt returns.
var (
	// ErrNoPOItem says there is no purchase order item with the given
	// numbers.
	ErrNoPOItem = errors.New("sim: purchase order item not found")
	// ErrInvalidQuantity says a goods receipt quantity is not positive.
	ErrInvalidQuantity = errors.New("sim: goods receipt quantity must be positive")
)

// GoodsReceipt is a material document item the simulator posted for goods
// that arrived: movement type 101, not cancelled.
type GoodsReceipt struct {
	MaterialDocument string          `json:"material_document"`
	Year             string          `json:"year"`
	Item             string          `json:"item"`
	POID             string          `json:"po_id"`
	POItem           string          `json:"po_item"`
	MovementType     string          `json:"movement_type"`
	Cancelled        bool            `json:"cancelled"`
	Quantity         decimal.Decimal `json:"quantity"`
	Unit             string          `json:"unit"`
	PostingDate      time.Time       `json:"posting_date"`
}

// PostGoodsReceipt records that qty units of a purchase order item arrived,
// as a warehouse clerk's goods receipt would: a new material document with
// movement type 101, posted today by Options.Now, in the item's unit. It
// returns the material document number, or ErrNoPOItem or
// ErrInvalidQuantity.
func (s *Server) PostGoodsReceipt(poID, item string, qty decimal.Decimal) (string, error) {
	gr, err := s.postGoodsReceipt(poID, item, qty)
	return gr.MaterialDocument, err
}

func (s *Server) postGoodsReceipt(poID, item string, qty decimal.Decimal) (GoodsReceipt, error) {
	if !qty.IsPositive() {
		return GoodsReceipt{}, ErrInvalidQuantity
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	po := s.st.order(poID)
	if po == nil {
		return GoodsReceipt{}, fmt.Errorf("%w: %s %s", ErrNoPOItem, poID, item)
	}
	it := po.item(item)
	if it == nil {
		return GoodsReceipt{}, fmt.Errorf("%w: %s %s", ErrNoPOItem, poID, item)
	}
	now := s.opts.Now().UTC()
	today := day(now.Year(), now.Month(), now.Day())
	h := &materialDocument{year: strconv.Itoa(now.Year()), doc: s.st.nextMaterialDocument(), documentDate: today, postingDate: today}
	r := &receipt{header: h, item: "1", po: po.id, poItem: it.item, movement: "101", qty: qty, unit: it.unit}
	s.st.materialDocs = append(s.st.materialDocs, h)
	s.st.receipts = append(s.st.receipts, r)
	return GoodsReceipt{
		MaterialDocument: h.doc, Year: h.year, Item: r.item, POID: r.po, POItem: r.poItem,
		MovementType: r.movement, Cancelled: r.cancelled, Quantity: r.qty, Unit: r.unit, PostingDate: h.postingDate,
	}, nil
}

// nextMaterialDocument follows the highest material document number in
// use, so new receipts never collide with the golden set's.
func (st *state) nextMaterialDocument() string {
	next := int64(4900000001)
	for _, h := range st.materialDocs {
		if n, err := strconv.ParseInt(h.doc, 10, 64); err == nil && n >= next {
			next = n + 1
		}
	}
	return strconv.FormatInt(next, 10)
}

// materialDocumentRow renders an A_MaterialDocumentHeader. Every material
// document the simulator holds is a goods receipt for a purchase order:
// transaction type WE, goods movement code 01.
func materialDocumentRow(h *materialDocument) obj {
	return obj{
		{"MaterialDocumentYear", h.year},
		{"MaterialDocument", h.doc},
		{"InventoryTransactionType", "WE"},
		{"DocumentDate", wireDate(h.documentDate)},
		{"PostingDate", wireDate(h.postingDate)},
		{"GoodsMovementCode", "01"},
	}
}

// adminGoodsReceipt is POST /sim/admin/goods-receipts
// {"po_id","item","quantity"}; it answers 201 with the GoodsReceipt.
func (s *Server) adminGoodsReceipt(w http.ResponseWriter, r *http.Request) {
	var b struct {
		POID     string          `json:"po_id"`
		Item     string          `json:"item"`
		Quantity decimal.Decimal `json:"quantity"`
	}
	if err := readAdminBody(r, &b); err != nil {
		adminError(w, http.StatusBadRequest, "invalid body: "+err.Error())
		return
	}
	if b.POID == "" || b.Item == "" {
		adminError(w, http.StatusBadRequest, "po_id and item are required")
		return
	}
	gr, err := s.postGoodsReceipt(b.POID, b.Item, b.Quantity)
	switch {
	case errors.Is(err, ErrInvalidQuantity):
		adminError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrNoPOItem):
		adminError(w, http.StatusNotFound, err.Error())
	case err != nil:
		adminError(w, http.StatusInternalServerError, err.Error())
	default:
		adminJSON(w, http.StatusCreated, gr)
	}
}
