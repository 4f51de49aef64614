package broker

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The rows a RawAuditor gets are byte for byte the maps an Auditor gets,
// encoded: json.Marshal sorts map keys, the structs list them sorted.
func TestRowsEncodeAsMaps(t *testing.T) {
	ids := callFields{
		CallID:       "00f067aa0ba902b7",
		InvocationID: "inv-1",
		SkillID:      "sk",
		TenantID:     "default",
		ToolName:     "Re<a>d & \u2028 \xff \"q\" é",
		TraceID:      "4bf92f3577b34da6a3ce929d0e0e4736",
	}
	for _, row := range []auditRow{
		&startedRow{ArgsHash: "9f86d08"},
		&completedRow{ArgsHash: "9f86d08", Outcome: OutcomeSuccess, DurationMS: 1 << 40, ArgsSizeBytes: 17, ResultSizeBytes: 0},
		&completedRow{},
		&deniedRow{AttemptedArgsHash: "9f86d08", Reason: "file_violation"},
	} {
		row.setCall(ids)
		got, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(row.fields())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%T encodes to\n%s\nthe map to\n%s", row, got, want)
		}
	}
}

// FuzzArgsHash: arguments ArgsHash takes as canonical without decoding
// them must be what CanonicalJSON makes of them, byte for byte.
func FuzzArgsHash(f *testing.F) {
	for _, s := range []string{
		`{"path":"/data/a.csv"}`, `{"limit":1,"path":"/d/f"}`, `{"path":"/d/f","limit":1}`,
		`{"a":{"b":[1,{"c":"<&>","d":null}],"e":true},"f":-1.50e3}`, `{"":1,"a":2}`, `{"a":1,"a":2}`,
		`{"é":1,"e":2}`, `{"e":1,"é":2}`, `["b","a"]`, `"s"`, `1e400`, `{}`, `[]`, `{"a":"\u2028"}`,
		"{\"a\":\"\u2028\"}", `{"a":"x\"y"}`, `{"a": 1}`, "{\"a\":\"\xff\"}", ``, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !isCanonical(raw) {
			return
		}
		want, err := CanonicalJSON(raw)
		if err != nil {
			t.Fatalf("isCanonical(%q) but CanonicalJSON: %v", raw, err)
		}
		if !bytes.Equal(want, raw) {
			t.Fatalf("isCanonical(%q) but CanonicalJSON gives %q", raw, want)
		}
	})
}
