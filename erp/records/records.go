// Package records keeps the gateway's own records of the process layer:
// approvals, holds with their re-check schedule, handovers with their
// webhook deliveries (an outbox), idempotency keys with the answers they
// replay, and the append-only audit log. SAP has no standard API for any of
// them, and a parked invoice needs no write to stay unpaid, so they live in
// the gateway's database: embedded SQLite by default (one replica),
// PostgreSQL for replicas.
//
// Open picks the engine from the URL; both engines pass the same test
// suite. The schema is versioned and migrated at Open.
package records

import (
	"context"
	"errors"
	"time"

	"github.com/shopspring/decimal"
)

// Errors a Store returns; match them with errors.Is.
var (
	// ErrNotFound: no record with that id.
	ErrNotFound = errors.New("records: not found")
	// ErrNotPending: the approval was decided before.
	ErrNotPending = errors.New("records: approval is not pending")
	// ErrSameRequester: the decider is the client that requested the
	// approval (segregation of duties).
	ErrSameRequester = errors.New("records: the requester cannot decide")
	// ErrHandoverState: the handover cannot move to that status from the
	// one it is in.
	ErrHandoverState = errors.New("records: handover status does not allow this")
)

// Approval statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalRejected = "rejected"
	// ApprovalSuperseded: another approval of the invoice took its place,
	// requested before this one was decided, or approved after it was.
	ApprovalSuperseded = "superseded"
	// ApprovalSentBack: a person sent it back to the agent with a question
	// (DecisionReason) instead of deciding it; the agent answers with a new
	// request. It gives its Dedupe up, as a superseded approval does.
	ApprovalSentBack = "sent_back"
)

// Approval is a request for a person's (or the routing's automatic)
// decision on a proposed action for an invoice.
type Approval struct {
	ID             string // "A0000001": assigned by the store
	InvoiceID      string
	FiscalYear     string
	CompanyCode    string
	Status         string // ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalSuperseded or ApprovalSentBack
	Approver       string // the approver group the routing chose, or "auto"
	ProposedAction string
	Justification  string
	Amount         decimal.Decimal
	Currency       string
	RequestedBy    string // the client that asked
	RequestedAt    time.Time
	DecidedBy      string    // empty while pending
	DecisionReason string    // empty while pending; for ApprovalSentBack, the question
	DecidedAt      time.Time // zero while pending
	// Dedupe is unique among approvals: a second CreateApproval with the
	// same Dedupe returns the first approval. Empty: never deduplicated.
	// A superseded or sent back approval gives its Dedupe up.
	Dedupe string
	// SupersededBy is the approval that superseded it; empty unless
	// Status is ApprovalSuperseded.
	SupersededBy string
	// SupplierID is the supplier of the invoice when it was requested;
	// empty for approvals kept before the store recorded it.
	SupplierID string
}

// ApprovalFilter selects approvals for a list; zero fields select all.
type ApprovalFilter struct {
	Status    string
	InvoiceID string
	// Approver is the approver group.
	Approver   string
	SupplierID string
	// MinAmount and MaxAmount bound the amount, both included, whatever
	// the currency; nil bounds nothing.
	MinAmount, MaxAmount *decimal.Decimal
	// NotRequestedBy leaves out the approvals that client requested: what
	// remains is what it may decide.
	NotRequestedBy string
	// OldestFirst lists in the order the approvals were requested, the
	// one waiting longest first, instead of newest first; Page.After is
	// then the id of the last record of the previous page all the same.
	OldestFirst bool
	Page
}

// Page bounds a list. Lists are in id order, newest first; After is the id
// of the last record of the previous page (empty for the first page).
// Limit 0 means 50; at most 500.
type Page struct {
	Limit int
	After string
}

// Hold statuses.
const (
	HoldHeld     = "held"
	HoldReleased = "released"
)

// POItemRef names a purchase order item.
type POItemRef struct {
	POID string `json:"po_id"`
	Item string `json:"item"`
}

// Hold keeps a parked invoice waiting until a re-check finds what it waits
// for (the goods receipts of Awaiting), or until the approval it waits for
// is decided. An invoice has at most one held hold.
type Hold struct {
	ID          string // "H0000001": assigned by the store
	InvoiceID   string
	FiscalYear  string
	Reason      string
	RecheckAt   time.Time   // the re-check time the agent asked for
	NextCheckAt time.Time   // when the scheduler looks next; RecheckAt at first
	Checks      int         // re-checks that found it still waiting
	Awaiting    []POItemRef // may be empty
	Status      string      // HoldHeld or HoldReleased
	CreatedBy   string
	CreatedAt   time.Time
	ReleasedAt  time.Time // zero while held
	Dedupe      string    // as Approval.Dedupe
	ApprovalID  string    // the approval whose decision it waits for; empty for none
	Until       time.Time // a date it waits for; zero for none
	RunID       string    // the run that placed it; may be empty
}

// HoldFilter selects holds for a list.
type HoldFilter struct {
	Status    string
	InvoiceID string
	Page
}

// HoldEvent is one entry of a hold's history.
type HoldEvent struct {
	HoldID string
	At     time.Time
	Kind   string // "placed", "merged", "rechecked", "receipt_seen", "released", "closed"
	Note   string
}

// Handover statuses.
const (
	HandoverQueued   = "queued"
	HandoverTaken    = "taken"
	HandoverResolved = "resolved"
)

// Handover routes an invoice to a person's queue with the context the agent
// gathered.
type Handover struct {
	ID         string // "HO0000001": assigned by the store
	InvoiceID  string
	Queue      string
	Code       string // the named outcome that led to it; may be empty
	Summary    string
	Evidence   []string
	History    string // the run's history as JSON; may be empty
	Status     string // HandoverQueued, HandoverTaken or HandoverResolved
	CreatedBy  string
	CreatedAt  time.Time
	TakenBy    string
	TakenAt    time.Time
	ResolvedBy string
	ResolvedAt time.Time
	Note       string // the resolution note
	Dedupe     string // as Approval.Dedupe
}

// HandoverFilter selects handovers for a list.
type HandoverFilter struct {
	Queue  string
	Status string
	Page
}

// Delivery kinds: what a webhook delivery tells of.
const (
	DeliveryHandover = "handover.created"
	DeliveryApproval = "approval.pending"
	// DeliveryHoldReleased: a hold was released (not closed); RecordID is
	// the hold's id. Queued only with Options.HoldEvents.
	DeliveryHoldReleased = "hold.released"
	// DeliveryApprovalDecided: a person decided an approval; RecordID is
	// the approval's id. Queued only with Options.HoldEvents.
	DeliveryApprovalDecided = "approval.decided"
)

// Delivery is one webhook notification in the outbox, written in the same
// transaction as the record it tells of, and delivered at least once.
type Delivery struct {
	ID          string // "D0000001": stable across retries, so a receiver can drop repeats
	Kind        string // DeliveryHandover, DeliveryApproval, DeliveryHoldReleased or DeliveryApprovalDecided
	RecordID    string // the handover, approval or hold id
	Attempts    int
	NextAt      time.Time
	DeliveredAt time.Time // zero until delivered
	LastError   string
}

// Key identifies one idempotency key of one client, with the digest of the
// arguments of the call that uses it.
type Key struct {
	Client    string
	Key       string
	Operation string
	Digest    string
}

// KeyState is what ClaimKey found.
type KeyState int

// The outcomes of ClaimKey.
const (
	// KeyClaimed: the caller runs the call and must CompleteKey or
	// ReleaseKey. TakenOver says a claim before it lapsed unfinished (its
	// gateway died); the call may have run.
	KeyClaimed KeyState = iota
	// KeyReplay: the call ran before; Response is its answer.
	KeyReplay
	// KeyInFlight: a call with this key is running now (LeaseUntil).
	KeyInFlight
	// KeyReused: the key was used with other arguments (another Digest).
	KeyReused
	// KeyCapReached: the client holds MaxPerClient live keys.
	KeyCapReached
)

// KeyClaim is ClaimKey's answer.
type KeyClaim struct {
	State      KeyState
	TakenOver  bool
	Response   *Response // KeyReplay only
	LeaseUntil time.Time // KeyInFlight: when the running claim lapses
}

// Response is a kept answer, replayed byte for byte.
type Response struct {
	Status  int
	Outcome string // the named outcome it carries, for metrics and the log
	Header  map[string][]string
	Body    []byte
}

// KeyOptions bounds ClaimKey.
type KeyOptions struct {
	// Lease is how long a claim stays in flight before another caller may
	// take it over. Zero means 1m.
	Lease time.Duration
	// MaxPerClient caps the live keys (in flight, or kept and not expired)
	// of one client. Zero means no cap.
	MaxPerClient int
}

// InvoiceLease is one write's hold on an invoice: while it lasts, no other
// write of that invoice runs, on any replica sharing the store.
type InvoiceLease struct {
	InvoiceID string
	// Holder names the call that holds the lease, unique per call; only
	// the holder releases it.
	Holder string
	// Operation is the holder's operation, told to the calls that wait.
	Operation string
}

// LeaseClaim is ClaimInvoice's answer: the lease is the caller's
// (Claimed; TakenOver when a holder's lease had lapsed unreleased, as when
// its gateway died), or another call holds it until LeaseUntil.
type LeaseClaim struct {
	Claimed    bool
	TakenOver  bool
	Operation  string    // not Claimed: the holder's operation
	LeaseUntil time.Time // not Claimed: when the holder's lease lapses
}

// AuditEntry is one row of the audit log: one write attempt.
type AuditEntry struct {
	ID         int64 // assigned by the store, increasing
	At         time.Time
	Client     string
	Operation  string
	InvoiceID  string
	ArgsDigest string
	ApprovalID string
	Document   string // the record or ERP document written, when any
	Outcome    string // "OK" or the named code
	RequestID  string
	Note       string // a person's note on the write, when they gave one
}

// AuditFilter selects audit rows, newest first; zero fields select all.
type AuditFilter struct {
	InvoiceID string
	Client    string    // the client (agent or person) that wrote
	Operation string    // such as decide_approval
	From      time.Time // rows at or after From
	To        time.Time // rows before To
	Limit     int       // 0 means 100; at most 1000
	BeforeID  int64     // 0: from the newest
}

// Case states: what an invoice's case waits for, or how it ended. The one
// place that says which state a case is in is caseState.
const (
	CaseOpen             = "open"              // nothing the records hold stands in its way
	CaseAwaitingApproval = "awaiting_approval" // an approval is pending
	CaseOnHold           = "on_hold"           // a hold is held
	CaseReady            = "ready"             // its approval is approved
	CasePosted           = "posted"            // it was posted
	CaseHandedOver       = "handed_over"       // a person has it: a handover queued or taken
	CaseResolved         = "resolved"          // a person resolved its handover
)

// Case is one invoice carried through time: the records that bear on it
// now and a version that moves by one with every transaction that changes
// any of them, so that an answer given at one version can be told apart
// from the case as it is.
type Case struct {
	InvoiceID      string
	State          string // one of the Case states
	Version        int64  // 0 until the first change
	HoldID         string // the held hold; empty for none
	ApprovalID     string // the approval last requested or decided; empty for none
	ApprovalStatus string // its status
	HandoverID     string // the newest handover; empty for none
	HandoverStatus string // its status
	Posted         bool
	// Calls counts the agent calls about the case, Runs the times a run
	// took it up from another (see TouchCase).
	Calls, Runs int
	// CreatedAt is when the case was made; UpdatedAt when its version
	// last moved (CreatedAt before that).
	CreatedAt, UpdatedAt time.Time
}

// CaseEvent is one change of a case. Its Kind is one of
// "approval.requested", "approval.decided", "approval.superseded",
// "hold.placed", "hold.merged", "hold.released", "hold.closed",
// "hold.receipt_seen", "handover.created", "handover.taken",
// "handover.resolved" and "invoice.posted".
type CaseEvent struct {
	ID        int64 // assigned by the store, increasing
	InvoiceID string
	Version   int64 // the case version the event's transaction made
	At        time.Time
	Kind      string
	Ref       string // the record's id (approval, hold, handover); empty for none
	Note      string
	RunID     string // the agent run that made it; may be empty
}

// CaseRef names the case a call is about: exactly one field is set.
type CaseRef struct {
	InvoiceID  string
	ApprovalID string    // the case of that approval's invoice
	HoldID     string    // the case of that hold's invoice
	POItem     POItemRef // the case of the newest hold, of any status, that waited for that item
}

// Store is the gateway's records. Implementations are safe for concurrent
// use, also by several processes sharing one database.
type Store interface {
	// CreateApproval stores a with a new id, or, when an approval with
	// a.Dedupe exists, returns that one with created false and changes
	// nothing. A new approval supersedes every pending approval of the
	// invoice and, when it is stored approved (the routing's automatic
	// approval), every approved one too. The invoice's held hold that
	// waits for an approval then waits for a pending new one, or has its
	// approval met by an approved one (see DecideApproval). With notify a
	// new approval also queues a DeliveryApproval. All of it is one
	// transaction, which moves the invoice's case.
	CreateApproval(ctx context.Context, a Approval, notify bool) (_ Approval, created bool, _ error)
	// Approval returns the approval or ErrNotFound.
	Approval(ctx context.Context, id string) (Approval, error)
	// DecideApproval records the decision (status ApprovalApproved,
	// ApprovalRejected or ApprovalSentBack, whose reason is the question
	// for the agent) of a pending approval in one conditional update. It
	// returns ErrNotFound, ErrSameRequester when decidedBy requested it, or
	// ErrNotPending together with the approval as it is (decided, or
	// superseded). An approval approved supersedes every other pending or
	// approved approval of the invoice; one sent back gives its Dedupe up,
	// so that the proposal asked again is a new approval. The invoice's
	// held hold that waits for the approval has it met, whatever the
	// decision: a hold that awaits no goods receipt is released, one that
	// does is due for its re-check at once. With Options.HoldEvents the
	// decision queues a DeliveryApprovalDecided. All of it is one
	// transaction, which moves the invoice's case.
	DecideApproval(ctx context.Context, id, status, decidedBy, reason string, at time.Time) (Approval, error)
	// ListApprovals returns approvals, newest first, or oldest first
	// with f.OldestFirst.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error)
	// CountApprovals counts the approvals f selects, of every page:
	// f.Page and f.OldestFirst are ignored.
	CountApprovals(ctx context.Context, f ApprovalFilter) (int, error)

	// CreateHold stores h with a new id (deduplicated as CreateApproval),
	// with a "placed" event. When the invoice has a held hold, h is merged
	// into it instead, with a "merged" event when that changes it: the
	// items it awaits are joined (its own first), and h's ApprovalID and
	// Until, when set, take the place of its own. The hold is returned
	// with created false. Either moves the invoice's case.
	CreateHold(ctx context.Context, h Hold) (_ Hold, created bool, _ error)
	// Hold returns the hold or ErrNotFound.
	Hold(ctx context.Context, id string) (Hold, error)
	// ListHolds returns holds, newest first.
	ListHolds(ctx context.Context, f HoldFilter) ([]Hold, error)
	// ClaimDueHolds returns up to limit held holds whose NextCheckAt is at
	// or before now, earliest first, and moves their NextCheckAt to
	// now+lease in the same transaction, so that of several gateways only
	// one claims a given hold until the lease runs out.
	ClaimDueHolds(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Hold, error)
	// RescheduleHold sets a held hold's NextCheckAt and, when checked,
	// counts a re-check and records a "rechecked" event.
	RescheduleHold(ctx context.Context, id string, next time.Time, checked bool, at time.Time) error
	// ReleaseHold ends a held hold with ev (Kind "released" or "closed"),
	// moving the invoice's case; with Options.HoldEvents a release queues a
	// DeliveryHoldReleased. Ending a hold that has ended is no error and
	// records nothing.
	ReleaseHold(ctx context.Context, ev HoldEvent) error
	// HoldAwaiting records the PO items a held hold still awaits after a
	// re-check. When they are fewer than it awaited, a "receipt_seen"
	// event tells which arrived and the invoice's case moves; otherwise
	// nothing changes. An ended hold stays as it is; an unknown one is
	// ErrNotFound.
	HoldAwaiting(ctx context.Context, holdID string, awaiting []POItemRef, at time.Time) error
	// HoldEvents returns a hold's events, oldest first.
	HoldEvents(ctx context.Context, holdID string) ([]HoldEvent, error)

	// CreateHandover stores h with a new id (deduplicated as
	// CreateApproval), moving the invoice's case; with notify it also
	// queues a DeliveryHandover in the same transaction.
	CreateHandover(ctx context.Context, h Handover, notify bool) (_ Handover, created bool, _ error)
	// Handover returns the handover or ErrNotFound.
	Handover(ctx context.Context, id string) (Handover, error)
	// ListHandovers returns handovers, newest first.
	ListHandovers(ctx context.Context, f HandoverFilter) ([]Handover, error)
	// TakeHandover moves a queued handover to taken by by;
	// ResolveHandover moves a queued or taken one to resolved with a note.
	// Either moves the invoice's case, or returns ErrNotFound or
	// ErrHandoverState.
	TakeHandover(ctx context.Context, id, by string, at time.Time) (Handover, error)
	ResolveHandover(ctx context.Context, id, by, note string, at time.Time) (Handover, error)

	// ClaimDeliveries returns up to limit undelivered deliveries whose
	// NextAt is at or before now, earliest first, moving their NextAt to
	// now+lease in the same transaction (one claimer per delivery).
	ClaimDeliveries(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Delivery, error)
	// DeliveryDone marks a delivery delivered.
	DeliveryDone(ctx context.Context, id string, at time.Time) error
	// DeliveryFailed counts a failed attempt and sets the next one.
	DeliveryFailed(ctx context.Context, id string, next time.Time, lastErr string) error

	// ClaimKey claims k for one call at now: see KeyState. A kept answer
	// past its expiry, or a claim in flight past its lease, is claimed
	// anew.
	ClaimKey(ctx context.Context, k Key, now time.Time, opts KeyOptions) (KeyClaim, error)
	// CompleteKey keeps resp as the key's answer until expires.
	CompleteKey(ctx context.Context, client, key string, resp Response, expires time.Time) error
	// ReleaseKey gives up a claim in flight without an answer.
	ReleaseKey(ctx context.Context, client, key string) error
	// DeleteExpiredKeys drops the answers kept past their expiry.
	DeleteExpiredKeys(ctx context.Context, now time.Time) (int, error)

	// ClaimInvoice gives l's holder the invoice's write lease until
	// now+lease, unless another holder's lease runs past now (see
	// LeaseClaim). Of concurrent claimers exactly one gets it.
	ClaimInvoice(ctx context.Context, l InvoiceLease, now time.Time, lease time.Duration) (LeaseClaim, error)
	// ReleaseInvoice ends holder's lease on the invoice; a lease of
	// another holder stays as it is.
	ReleaseInvoice(ctx context.Context, invoiceID, holder string) error

	// ClaimWrite claims a keyed write's key and, once the key is claimed,
	// its invoice's lease, in one transaction (see WriteClaim).
	ClaimWrite(ctx context.Context, c WriteClaim, now time.Time) (WriteClaimed, error)
	// Settle writes a write's audit row, its key's answer and its lease's
	// release in one transaction (see Settlement). A key no longer in
	// flight is ErrNotFound, after the other parts are committed.
	Settle(ctx context.Context, st Settlement) error

	// Case returns the invoice's case, or ErrNotFound when nothing has
	// made one yet.
	Case(ctx context.Context, invoiceID string) (Case, error)
	// CaseEvents returns up to limit (0: 100, at most 1000) of the case's
	// events, oldest first; none for an invoice without a case.
	CaseEvents(ctx context.Context, invoiceID string, limit int) ([]CaseEvent, error)
	// TouchCase counts one agent call of run runID about the case ref
	// names (Calls+1, and Runs+1 when runID is not empty and not the run
	// of the case's previous counted call: a run taking the invoice up
	// from another, a resumption) and returns the case as it is after. For an
	// InvoiceID it makes the case when missing. For an ApprovalID or
	// HoldID it finds the record's invoice (an unknown record: the zero
	// Case and a nil error) and makes the case when missing. For a POItem
	// it only reads, and counts nothing: the case of the newest hold that
	// waited for that item, or the zero Case when there is none. Its
	// commit does not wait for the disk: a count lost in a crash is
	// harmless. It never moves the version.
	TouchCase(ctx context.Context, ref CaseRef, runID string) (Case, error)
	// RecordPosting records that the invoice was posted with approvalID,
	// closing its held hold ("closed", note "invoice posted"), and
	// returns the case. Recording a posting again changes nothing.
	RecordPosting(ctx context.Context, invoiceID, approvalID, runID string, at time.Time) (Case, error)

	// AppendAudit adds a row to the audit log. No method changes or
	// removes one.
	AppendAudit(ctx context.Context, e AuditEntry) error
	// Audit returns audit rows, newest first.
	Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)

	// CreateSession stores a console session under the hash of its token
	// (sessions.go); Session returns it, ended or expired alike, or
	// ErrNotFound; EndSession ends it (signing out), on every replica at
	// once; DeleteExpiredSessions drops the expired ones.
	CreateSession(ctx context.Context, token string, s Session) error
	Session(ctx context.Context, token string) (Session, error)
	EndSession(ctx context.Context, token string, at time.Time) error
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)

	// Engine names the database: "sqlite" or "postgres".
	Engine() string
	// Ping checks the database answers.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}
