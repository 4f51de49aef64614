package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/tools"
)

const (
	w3cTrace = "0af7651916cd43dd8448eb211c80319c"
	w3cSpan  = "b7ad6b7169203331"
	w3cTP    = "00-" + w3cTrace + "-" + w3cSpan + "-01"
)

func TestParseTraceParent(t *testing.T) {
	tests := []struct {
		name, in string
		want     broker.TraceParent // zero: invalid
	}{
		{"sampled", w3cTP, broker.TraceParent{TraceID: w3cTrace, SpanID: w3cSpan, Flags: "01"}},
		{"not sampled", "00-" + w3cTrace + "-" + w3cSpan + "-00", broker.TraceParent{TraceID: w3cTrace, SpanID: w3cSpan, Flags: "00"}},
		{"unknown flags kept", "00-" + w3cTrace + "-" + w3cSpan + "-ff", broker.TraceParent{TraceID: w3cTrace, SpanID: w3cSpan, Flags: "ff"}},
		{"empty", "", broker.TraceParent{}},
		{"version ff", "ff-" + w3cTrace + "-" + w3cSpan + "-01", broker.TraceParent{}},
		{"future version", "01-" + w3cTrace + "-" + w3cSpan + "-01", broker.TraceParent{}},
		{"future version with more fields", "01-" + w3cTrace + "-" + w3cSpan + "-01-abcd", broker.TraceParent{}},
		{"extra field on 00", w3cTP + "-abcd", broker.TraceParent{}},
		{"uppercase trace id", "00-" + strings.ToUpper(w3cTrace) + "-" + w3cSpan + "-01", broker.TraceParent{}},
		{"uppercase flags", "00-" + w3cTrace + "-" + w3cSpan + "-0A", broker.TraceParent{}},
		{"zero trace id", "00-" + strings.Repeat("0", 32) + "-" + w3cSpan + "-01", broker.TraceParent{}},
		{"zero parent id", "00-" + w3cTrace + "-" + strings.Repeat("0", 16) + "-01", broker.TraceParent{}},
		{"non-hex parent id", "00-" + w3cTrace + "-b7ad6b716920333g-01", broker.TraceParent{}},
		{"short trace id", "00-" + w3cTrace[1:] + "-" + w3cSpan + "-01", broker.TraceParent{}},
		{"underscores", "00_" + w3cTrace + "_" + w3cSpan + "_01", broker.TraceParent{}},
		{"leading space", " " + w3cTP[:54], broker.TraceParent{}},
		{"trailing newline", w3cTP[:54] + "\n", broker.TraceParent{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := broker.ParseTraceParent(tt.in)
			if tt.want == (broker.TraceParent{}) {
				if !errors.Is(err, broker.ErrInvalidTraceParent) || got != tt.want {
					t.Fatalf("ParseTraceParent(%q) = %+v, %v; want ErrInvalidTraceParent", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want || got.String() != tt.in {
				t.Fatalf("ParseTraceParent(%q) = %+v (%s), %v; want %+v", tt.in, got, got, err, tt.want)
			}
		})
	}
}

// traceparentRE is the version 00 grammar, as an independent oracle.
var traceparentRE = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// FuzzTraceparent checks the parser against the grammar: it accepts
// exactly the version 00 strings with non-zero ids, and what it accepts
// prints back unchanged.
func FuzzTraceparent(f *testing.F) {
	f.Add(w3cTP)
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := broker.ParseTraceParent(s)
		want := traceparentRE.MatchString(s) && s[3:35] != strings.Repeat("0", 32) && s[36:52] != strings.Repeat("0", 16)
		if (err == nil) != want {
			t.Fatalf("ParseTraceParent(%q) err = %v, grammar says valid=%v", s, err, want)
		}
		if err != nil {
			if !errors.Is(err, broker.ErrInvalidTraceParent) {
				t.Fatalf("error %v does not wrap ErrInvalidTraceParent", err)
			}
			return
		}
		if tp.String() != s || !broker.ValidTraceID(tp.TraceID) {
			t.Fatalf("ParseTraceParent(%q) = %+v, prints %q", s, tp, tp)
		}
	})
}

// echo exercises no capability and returns what the broker handed it.
type echo struct{}

type echoResult struct {
	TraceParent string `json:"traceparent"`
	TraceID     string `json:"trace_id"`
	Pad         string `json:"pad"`
}

func (echo) Spec() tools.Spec {
	return tools.Spec{Name: "Echo", Description: "echoes its trace", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (echo) Invoke(_ context.Context, c tools.Call) (any, error) {
	var args struct {
		Pad string `json:"pad"`
	}
	if err := json.Unmarshal(c.Args, &args); err != nil && len(c.Args) > 0 {
		return nil, err
	}
	return echoResult{TraceParent: c.TraceParent, TraceID: c.TraceID, Pad: args.Pad}, nil
}

// startEcho serves a skill allowed Echo (and nothing else served) on a
// real socket.
func startEcho(t *testing.T, traceID string) (*broker.Broker, *jsonrpc.Client, *recorder) {
	t.Helper()
	fm := "---\nname: t\ndescription: d\nallowed-tools: Echo\n---\n"
	snap, e := compile(t, fm, echo{}.Spec())
	audit := &recorder{}
	b, err := broker.New(broker.Config{Snapshot: snap, Enforcer: e, Registry: registry(t, echo{}),
		InvocationID: "inv-1", Audit: audit, TraceID: traceID})
	if err != nil {
		t.Fatal(err)
	}
	sock := t.TempDir() + "/b.sock"
	l, err := broker.Listen(sock, broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, b, l)
	return b, dial(t, sock), audit
}

// TestTracePropagation checks which trace each call continues, that every
// call gets a span of its own, and that its audit rows carry both.
func TestTracePropagation(t *testing.T) {
	own := "4bf92f3577b34da6a3ce929d0e0e4736"
	b, client, audit := startEcho(t, own)
	if b.TraceID() != own {
		t.Fatalf("TraceID() = %s, want %s", b.TraceID(), own)
	}
	tests := []struct {
		name, sent          string
		wantTrace, wantFlag string
		verbatim            bool // the tool propagates the skill's own traceparent
	}{
		{"continues the skill's trace", w3cTP, w3cTrace, "01", true},
		{"keeps the skill's flags", "00-" + w3cTrace + "-" + w3cSpan + "-00", w3cTrace, "00", true},
		{"absent: the invocation's trace", "", own, "01", false},
		{"invalid: the invocation's trace", "ff-" + w3cTrace + "-" + w3cSpan + "-01", own, "01", false},
		{"all-zero trace id: the invocation's trace", "00-" + strings.Repeat("0", 32) + "-" + w3cSpan + "-01", own, "01", false},
	}
	callIDs := map[string]bool{w3cSpan: true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got echoResult
			if err := client.CallTool(t.Context(), "Echo", map[string]string{}, tt.sent, &got); err != nil {
				t.Fatal(err)
			}
			tp, err := broker.ParseTraceParent(got.TraceParent)
			if err != nil || tp.TraceID != tt.wantTrace || tp.Flags != tt.wantFlag || got.TraceID != tt.wantTrace {
				t.Fatalf("tool got %+v (%v); want trace %s flags %s", got, err, tt.wantTrace, tt.wantFlag)
			}
			if tt.verbatim && got.TraceParent != tt.sent {
				t.Fatalf("tool propagates %s, want the skill's %s verbatim", got.TraceParent, tt.sent)
			}
			rows := audit.take()
			if len(rows) != 2 {
				t.Fatalf("%d rows, want started and completed", len(rows))
			}
			callID, _ := rows[0].payload["call_id"].(string)
			if callIDs[callID] || len(callID) != 16 {
				t.Fatalf("call_id %q reused or malformed", callID)
			}
			callIDs[callID] = true
			if !tt.verbatim && tp.SpanID != callID {
				t.Errorf("the broker's own traceparent has parent-id %s, want the call's %s", tp.SpanID, callID)
			}
			for _, r := range rows {
				if r.payload["trace_id"] != tt.wantTrace || r.payload["call_id"] != callID {
					t.Errorf("%s row: trace_id %v call_id %v; want %s %s", r.kind, r.payload["trace_id"], r.payload["call_id"], tt.wantTrace, callID)
				}
			}
		})
	}
}

// TestOwnTraceWhenNoneGiven checks New makes up a valid trace id.
func TestOwnTraceWhenNoneGiven(t *testing.T) {
	b, client, _ := startEcho(t, "")
	if !broker.ValidTraceID(b.TraceID()) {
		t.Fatalf("TraceID() = %q", b.TraceID())
	}
	var got echoResult
	if err := client.CallTool(t.Context(), "Echo", nil, "", &got); err != nil {
		t.Fatal(err)
	}
	if got.TraceID != b.TraceID() || !strings.HasPrefix(got.TraceParent, "00-"+b.TraceID()+"-") {
		t.Fatalf("tool got %+v, want the broker's trace %s", got, b.TraceID())
	}
}

// TestAuditPayloadKeys pins the exact keys of each row kind (DESIGN §7,
// seed §8), the sizes, and that started and completed share call_id.
func TestAuditPayloadKeys(t *testing.T) {
	_, client, audit := startEcho(t, "")
	args := map[string]string{"pad": strings.Repeat("x", 100)}
	var got json.RawMessage
	if err := client.CallTool(t.Context(), "Echo", args, w3cTP, &got); err != nil {
		t.Fatal(err)
	}
	_ = client.CallTool(t.Context(), "Bash", map[string]string{"command": "id"}, w3cTP, nil)
	common := []string{"invocation_id", "skill_id", "tenant_id", "tool_name", "trace_id", "call_id"}
	want := []struct {
		kind string
		keys []string
	}{
		{broker.KindToolCallStarted, []string{"args_hash"}},
		{broker.KindToolCallCompleted, []string{"args_hash", "outcome", "duration_ms", "args_size_bytes", "result_size_bytes"}},
		{broker.KindToolDenied, []string{"reason", "attempted_args_hash"}},
	}
	rows := audit.take()
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		keys := slices.Sorted(maps.Keys(rows[i].payload))
		wantKeys := slices.Sorted(slices.Values(append(slices.Clone(common), w.keys...)))
		if rows[i].kind != w.kind || !slices.Equal(keys, wantKeys) {
			t.Errorf("row %d: %s %v; want %s %v", i, rows[i].kind, keys, w.kind, wantKeys)
		}
		if rows[i].payload["trace_id"] != w3cTrace {
			t.Errorf("row %d: trace_id %v", i, rows[i].payload["trace_id"])
		}
	}
	started, completed, denied := rows[0].payload, rows[1].payload, rows[2].payload
	if started["call_id"] != completed["call_id"] || started["call_id"] == denied["call_id"] {
		t.Errorf("call ids: started %v completed %v denied %v", started["call_id"], completed["call_id"], denied["call_id"])
	}
	argsJSON, _ := json.Marshal(args)
	if completed["args_size_bytes"] != len(argsJSON) || completed["result_size_bytes"] != len(got) {
		t.Errorf("sizes: args %v result %v; want %d %d", completed["args_size_bytes"], completed["result_size_bytes"], len(argsJSON), len(got))
	}
	if completed["outcome"] != broker.OutcomeSuccess || denied["tool_name"] != "Bash" {
		t.Errorf("completed %v denied %v", completed, denied)
	}
}
