//go:build integration

package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP collector: what the real skillrun binary
// exports, decoded.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource map[string]string
	calls    map[string]int64 // tool_calls_total by outcome, summed over points
}

func newOTLPReceiver(t *testing.T) (*otlpReceiver, *httptest.Server) {
	t.Helper()
	rc := &otlpReceiver{resource: map[string]string{}, calls: map[string]int64{}}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	return rc, srv
}

func (rc *otlpReceiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch r.URL.Path {
	case "/v1/traces":
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				rc.resource[kv.Key] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
	case "/v1/metrics":
		var req collectormetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != "tool_calls_total" {
						continue
					}
					for _, p := range m.GetSum().GetDataPoints() {
						rc.calls[attr(p.Attributes, "outcome")] += p.GetAsInt()
					}
				}
			}
		}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func attr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			v := kv.GetValue()
			if s, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
				return fmt.Sprint(s.IntValue)
			}
			return v.GetStringValue()
		}
	}
	return ""
}

// named returns the received spans called name.
func (rc *otlpReceiver) named(name string) []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rc.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// runEnv is env.run with variables added to skillrun's environment.
func (e *env) runEnv(extra []string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, skillrunBin, append([]string{"--root", e.root}, args...)...)
	cmd.Env = append(os.Environ(), extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if cmd.ProcessState == nil {
		e.t.Fatalf("skillrun %v: %v", args, err)
	}
	r.code = cmd.ProcessState.ExitCode()
	if first, _, ok := strings.Cut(r.stderr, "\n"); ok && strings.HasPrefix(first, "invocation ") {
		r.id = strings.TrimPrefix(first, "invocation ")
	}
	return r
}

// TestOTLPExport runs the real binary against a collector in the test:
// every tool call's span, in the skill's trace or else the operator's, the
// tool spans under them, the invocation's root span and the call counts
// are all at the collector when exec has exited.
func TestOTLPExport(t *testing.T) {
	e := newEnv(t)
	rc, srv := newOTLPReceiver(t)
	const (
		skillTrace, skillSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
		opTrace, opSpan       = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	)
	data := t.TempDir()
	file := filepath.Join(data, "f")
	os.WriteFile(file, []byte("traced\n"), 0o644)
	dir := e.skill("traced", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", file), pyClient+`
connect()
TP = "00-`+skillTrace+`-`+skillSpan+`-01"
for i in range(2):
    r = call("tool.call", {"tool": "Read", "args": {"path": "`+file+`"}, "traceparent": TP})
    assert "result" in r, r
r = call("tool.call", {"tool": "Read", "args": {"path": "`+file+`"}})
assert "result" in r, r
r = call("tool.call", {"tool": "Bash", "args": {"command": "id"}, "traceparent": TP})
assert "error" in r, r
print("done=1")
`)
	e.trust(dir)
	r := e.runEnv([]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_TRACES_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_COMPRESSION=gzip", "TRACEPARENT=00-" + opTrace + "-" + opSpan + "-01",
	}, "exec", dir)
	wantExit(t, r, 0)
	if lines(r.stdout)["done"] != "1" {
		t.Fatalf("skill output: %s", r.stdout)
	}

	roots := rc.named("skill.invocation")
	if len(roots) != 1 {
		t.Fatalf("%d skill.invocation spans, want 1", len(roots))
	}
	root := roots[0]
	if hex.EncodeToString(root.TraceId) != opTrace || hex.EncodeToString(root.ParentSpanId) != opSpan {
		t.Errorf("root span in trace %x under %x, want the operator's %s %s", root.TraceId, root.ParentSpanId, opTrace, opSpan)
	}
	for k, v := range map[string]string{"invocation_id": r.id, "skill_id": "traced", "outcome": "completed", "exit_code": "0", "tenant_id": "default"} {
		if got := attr(root.Attributes, k); got != v {
			t.Errorf("root span %s = %q, want %q", k, got, v)
		}
	}

	calls := rc.named("skill.broker.tool_call")
	if len(calls) != 4 {
		t.Fatalf("%d tool_call spans, want 4 (one per call)", len(calls))
	}
	byOutcome, byTrace := map[string]int{}, map[string]int{}
	callIDs := map[string]bool{}
	for _, s := range calls {
		outcome := attr(s.Attributes, "outcome")
		byOutcome[outcome]++
		callIDs[hex.EncodeToString(s.SpanId)] = true
		if attr(s.Attributes, "skill_id") != "traced" || attr(s.Attributes, "duration_ms") == "" ||
			attr(s.Attributes, "args_size_bytes") == "" || attr(s.Attributes, "result_size_bytes") == "" {
			t.Errorf("tool_call span attributes: %v", s.Attributes)
		}
		// A call with the skill's traceparent is under the skill's span;
		// the one without, under the invocation's root span.
		parent := map[string]string{skillTrace: skillSpan, opTrace: hex.EncodeToString(root.SpanId)}
		trace := hex.EncodeToString(s.TraceId)
		byTrace[trace]++
		if want, ok := parent[trace]; !ok || hex.EncodeToString(s.ParentSpanId) != want {
			t.Errorf("%s call span in trace %s under %x", outcome, trace, s.ParentSpanId)
		}
	}
	if byOutcome["success"] != 3 || byOutcome["denied"] != 1 || byTrace[skillTrace] != 3 || byTrace[opTrace] != 1 {
		t.Errorf("call spans by outcome %v, by trace %v; want 3 success and 1 denied, 3 in the skill's trace and 1 in the operator's", byOutcome, byTrace)
	}
	reads := rc.named("skill.tool.read.exec")
	if len(reads) != 3 {
		t.Errorf("%d skill.tool.read.exec spans, want 3", len(reads))
	}
	for _, s := range reads {
		if !callIDs[hex.EncodeToString(s.ParentSpanId)] {
			t.Errorf("tool span under %x, not under a call span", s.ParentSpanId)
		}
	}

	// The audit rows name the same calls: call_id is the span id.
	for _, row := range e.rows(r.id) {
		if !strings.HasPrefix(row.Kind, "skill.tool_") {
			continue
		}
		var p struct {
			CallID string `json:"call_id"`
		}
		if err := json.Unmarshal(row.Payload, &p); err != nil || !callIDs[p.CallID] {
			t.Errorf("%s row call_id %q is no exported span (%v)", row.Kind, p.CallID, err)
		}
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.calls["success"] != 3 || rc.calls["denied"] != 1 {
		t.Errorf("tool_calls_total %v, want success 3, denied 1", rc.calls)
	}
	if rc.resource["service.name"] != "skillrun" {
		t.Errorf("resource %v", rc.resource)
	}
	t.Logf("collector got %d spans (root in trace %x) and tool_calls_total %v before exec exited in %s", len(rc.spans), root.TraceId, rc.calls, r.elapsed)
}
