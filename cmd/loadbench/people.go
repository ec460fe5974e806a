package main

import (
	"crypto/sha256"
	"net/http"

	"github.com/erpgate/erpgate/api"
)

// The benchmarks' gateways run without API keys: their agents call without
// a key, as the agent anonymous, and the person who decides is a
// demonstration person known by a key of the benchmarks' own
// (gateway.Config.DemoPeople), as in a gateway started without -api-keys.
// No call without a key can decide.

// approver is the person who decides the benchmarks' approvals.
const approver = "m.keller"

// personKey is the API key of the benchmarks' person name.
func personKey(name string) string { return "loadbench-key-of-" + name }

// benchPeople are the demonstration people of the benchmarks' gateways.
var benchPeople = []api.Credential{
	{Name: approver, KeySHA256: sha256.Sum256([]byte(personKey(approver))), Scopes: []string{api.ScopeApprove}},
}

// as is the header of a call by the person name.
func as(name string) http.Header {
	h := http.Header{}
	h.Set("X-API-Key", personKey(name))
	return h
}
