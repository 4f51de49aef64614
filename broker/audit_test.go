package broker_test

import (
	"encoding/json"
	"testing"

	"github.com/skillrun/skillrun/broker"
)

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: `{"b":1,"a":2}`, want: `{"a":2,"b":1}`},
		{in: " {\n \"z\" : [ 1 , {\"y\":true,\"x\":null} ] }\t", want: `{"z":[1,{"x":null,"y":true}]}`},
		{in: `{"path":"\u002fetc\/x <&>"}`, want: `{"path":"/etc/x <&>"}`},
		{in: `{"n":1.50,"m":1e3,"k":-0}`, want: `{"k":-0,"m":1e3,"n":1.50}`},
		{in: `{"a":1,"a":2}`, want: `{"a":2}`},
		{in: `{"é":1,"e":2,"E":3}`, want: `{"E":3,"e":2,"é":1}`},
		{in: `"s"`, want: `"s"`},
		{in: ``, want: `null`},
		{in: `  `, want: `null`},
		{in: `{"a":`, bad: true},
		{in: `{"a":1} {"b":2}`, bad: true},
		{in: `{"a":1} }`, bad: true},
		{in: `nul`, bad: true},
	}
	for _, tt := range tests {
		got, err := broker.CanonicalJSON(json.RawMessage(tt.in))
		if tt.bad {
			if err == nil {
				t.Errorf("CanonicalJSON(%q) = %s, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("CanonicalJSON(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestArgsHashEqualArgs checks that spellings of the same arguments hash
// alike and different arguments do not.
func TestArgsHashEqualArgs(t *testing.T) {
	a := broker.ArgsHash(json.RawMessage(`{"path":"/d/f","limit":1}`))
	b := broker.ArgsHash(json.RawMessage(`{ "limit" : 1, "path" : "\/d\/f" }`))
	c := broker.ArgsHash(json.RawMessage(`{"path":"/d/g","limit":1}`))
	if a != b || a == c || len(a) != 64 {
		t.Fatalf("hashes %s %s %s", a, b, c)
	}
}
