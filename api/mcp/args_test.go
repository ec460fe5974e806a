package mcp

import (
	"bytes"
	"encoding/json"
	"net"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestScalarArgsIsEncodingJSON decodes arguments with scalarArgs and with
// encoding/json (UseNumber), as the SDK path does, and wants the same map
// wherever scalarArgs takes them: exactly the strictly valid objects of
// plain values.
func TestScalarArgsIsEncodingJSON(t *testing.T) {
	cases := []struct {
		raw   string
		taken bool
	}{
		{`{}`, true},
		{` { "invoice_id" : "5105600101" } `, true},
		{`{"invoice_id":"5105600101","run_id":"run-8f2c"}`, true},
		{`{"n":10,"f":1.50,"e":-2e3,"big":123456789012345678901234567890,"t":true,"x":false,"z":null}`, true},
		{`{"s":"a\"b\\c\/d\n\u00e9\u2028<>&","u":"é","p":"\ud83d\ude00"}`, true},
		{`{"lone":"\ud800"}`, false},
		{`{"a":1,"a":2}`, false},
		{"{\"bad\":\"\xff\"}", false},
		{`{"list":[1]}`, false},
		{`{"obj":{}}`, false},
		{`[1]`, false},
		{`"x"`, false},
		{`null`, false},
		{`{"a":1} {}`, false},
		{`{"a":1,}`, false},
	}
	for _, c := range cases {
		got, ok := scalarArgs([]byte(c.raw))
		if ok != c.taken {
			t.Errorf("%s: taken %v, want %v", c.raw, ok, c.taken)
		}
		if !ok {
			if got != nil {
				t.Errorf("%s: not taken, and decoded %v", c.raw, got)
			}
			continue
		}
		if !jsontext.Value(c.raw).IsValid() {
			t.Errorf("%s: taken, and not strictly valid", c.raw)
		}
		want := map[string]any{}
		dec := json.NewDecoder(bytes.NewReader([]byte(c.raw)))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("%s: %v", c.raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", c.raw, got, want)
		}
	}
}

// TestLocalLoopbackIsTheSDKs checks localLoopback against the SDK's test of
// a listener's address (loopback of its text) for the addresses a
// listener has.
func TestLocalLoopbackIsTheSDKs(t *testing.T) {
	addrs := []net.Addr{
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080},
		&net.TCPAddr{IP: net.ParseIP("127.0.0.1").To4(), Port: 1},
		&net.TCPAddr{IP: net.IPv4(127, 9, 8, 7), Port: 1},
		&net.TCPAddr{IP: net.IPv6loopback, Port: 443},
		&net.TCPAddr{IP: net.ParseIP("::1"), Port: 443, Zone: "lo"},
		&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 1},
		&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 8080},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 1, Zone: "eth0"},
		&net.TCPAddr{IP: net.IPv6zero, Port: 1},
		&net.TCPAddr{Port: 1},
		&net.UnixAddr{Name: "/tmp/erpgate.sock", Net: "unix"},
	}
	for _, a := range addrs {
		if got, want := localLoopback(a), loopback(a.String()); got != want {
			t.Errorf("%s: %v, want %v", a, got, want)
		}
	}
}
