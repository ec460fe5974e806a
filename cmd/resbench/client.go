package main

import (
	"context"
	"time"

	"github.com/erpgate/erpgate/retry"
)

// poID is the purchase order every request reads.
const poID = "4500018822"

// outcome is what one request came to, as the agent sees it.
type outcome int

const (
	// unfinished: not answered before the run's cap, or never sent.
	unfinished outcome = iota
	// success: the purchase order came back.
	success
	// failure: the agent got an error.
	failure
	// fastFail: a failure the gateway's open breaker gave at once.
	fastFail
)

// answer is one request's outcome with the gateway's error code and the
// attempts the gateway reported making, if any.
type answer struct {
	outcome  outcome
	code     string
	attempts int
}

// client is one way for an agent to read the purchase order, set up for
// one run.
type client interface {
	// get reads the purchase order once.
	get(ctx context.Context) answer
	// openings returns when the purchase order breaker opened, and false
	// for a client that has no breaker.
	openings() ([]time.Time, bool)
	// close releases the client's servers and connections.
	close()
}

// contender is a kind of client, started afresh for every run; the
// ERP's quota is the gateway's alone.
type contender struct {
	name  string
	start func(erpURL string, concurrency int, quota retry.QuotaSettings) (client, error)
}

// contenders are the clients compared, in the table's order.
func contenders() []contender {
	return []contender{
		{name: "erpgate", start: startGateway},
		{name: "naive", start: startNaive},
	}
}

// unanswered is the answer to a request that got no HTTP answer: unfinished
// when the run's cap ended it, a failure otherwise.
func unanswered(ctx context.Context) answer {
	if ctx.Err() != nil {
		return answer{outcome: unfinished}
	}
	return answer{outcome: failure, code: "NO_ANSWER"}
}
