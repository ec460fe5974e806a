package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/erpgate/erpgate/api"
)

// A gateway without -api-keys and -oauth-issuer serves its agents without
// keys: a call without one is the agent anonymous, with the scopes read,
// write and post. On the simulated ERP it also makes demonstration people,
// each with a key of its own, new at every start, so that the console's
// sign-in and the operations of people work as with keys, and no caller
// without a key can ever decide. In front of a real ERP there are none:
// its people get keys with -api-keys.

// demoCast are the demonstration people: their names, their scopes, and the
// shell variable the start block exports each key as.
var demoCast = []struct {
	name, variable string
	scopes         []string
}{
	{"m.keller", "KELLER_KEY", []string{api.ScopeApprove, api.ScopeReview}},
	{"j.novak", "NOVAK_KEY", []string{api.ScopeReview}},
	{"a.auditor", "AUDITOR_KEY", []string{api.ScopeAudit}},
}

// demoPerson is a demonstration person with the key made for this start.
type demoPerson struct {
	name, variable, key string
	scopes              []string
}

// demoPeople are the demonstration people of one start.
type demoPeople []demoPerson

// newDemoPeople makes the demonstration people of the gateway cfg
// describes, each key 16 bytes of random, in hex: none beside -api-keys or
// -oauth-issuer, or in front of a real ERP.
func newDemoPeople(cfg config, random io.Reader) (demoPeople, error) {
	if len(cfg.credentials) > 0 || cfg.oauth.issuer != "" || cfg.erpURL != "" {
		return nil, nil
	}
	people := make(demoPeople, 0, len(demoCast))
	for _, c := range demoCast {
		b := make([]byte, 16)
		if _, err := io.ReadFull(random, b); err != nil {
			return nil, fmt.Errorf("make the demonstration people's keys: %w", err)
		}
		people = append(people, demoPerson{name: c.name, variable: c.variable, key: hex.EncodeToString(b), scopes: c.scopes})
	}
	return people, nil
}

// credentials are the people as the API knows them, by the hash of their
// keys (api.Options.DemoPeople).
func (p demoPeople) credentials() []api.Credential {
	var out []api.Credential
	for _, d := range p {
		out = append(out, api.Credential{Name: d.name, KeySHA256: sha256.Sum256([]byte(d.key)), Scopes: d.scopes})
	}
	return out
}

// announce tells the people and their keys once, at start: a line each in
// the log, and a block on w (the log's writer, so that nothing is written
// between its lines) a person can paste into a shell. public is the
// gateway's base URL.
func (p demoPeople) announce(logger *slog.Logger, w io.Writer, public string) error {
	if len(p) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("---- erpgate demonstration people " + strings.Repeat("-", 46) + "\n")
	b.WriteString("No -api-keys: a call without a key is the agent \"anonymous\" (read, write, post),\n")
	b.WriteString("which decides nothing. These people's keys are new at every start: sign in at\n")
	fmt.Fprintf(&b, "%s/console with one, or send it as X-API-Key. In a shell:\n", public)
	for _, d := range p {
		logger.Warn("demonstration person: sign in at /console with the key, or send it as X-API-Key",
			"name", d.name, "scopes", strings.Join(d.scopes, "+"), "key", d.key)
		fmt.Fprintf(&b, "  export %s=%s   # %s: %s\n", d.variable, d.key, d.name, strings.Join(d.scopes, ", "))
	}
	b.WriteString(strings.Repeat("-", 80) + "\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write the demonstration people: %w", err)
	}
	return nil
}
