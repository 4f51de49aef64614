package telemetry_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/skillrun/skillrun/telemetry"
)

// exercise makes one span and one count with tel, then shuts it down.
func exercise(t *testing.T, tel *telemetry.Telemetry) error {
	t.Helper()
	_, span := tel.Tracer().Start(t.Context(), "skill.test")
	span.End()
	c, err := tel.Meter().Int64Counter("test_total")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(t.Context(), 1)
	return tel.Shutdown(t.Context())
}

func TestSetupNone(t *testing.T) {
	tel, err := telemetry.Setup(t.Context(), telemetry.Config{Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	// Off is nil: no provider, so no exporter and no goroutine exists.
	if tel != telemetry.Off() || tel.TracingEnabled() || tel.MetricsEnabled() {
		t.Fatalf("Setup built %+v: want Off", tel)
	}
	// Spans still have ids of their own, continuing their parent's trace.
	ctx, root := tel.Tracer().Start(t.Context(), "root")
	_, child := tel.Tracer().Start(ctx, "child")
	_, other := tel.Tracer().Start(ctx, "other", trace.WithNewRoot())
	rsc, csc, osc := root.SpanContext(), child.SpanContext(), other.SpanContext()
	switch {
	case !rsc.IsValid() || !rsc.IsSampled() || root.IsRecording():
		t.Errorf("root %+v recording %v: want valid ids, sampled, not recording", rsc, root.IsRecording())
	case csc.TraceID() != rsc.TraceID() || csc.SpanID() == rsc.SpanID() || !csc.IsValid():
		t.Errorf("child %v of %v: want the same trace, a new span", csc, rsc)
	case osc.TraceID() == rsc.TraceID() || !osc.IsValid():
		t.Errorf("new root %v: want a new trace", osc)
	}
	if err := exercise(t, tel); err != nil {
		t.Fatal(err)
	}
}

func TestSetupDisabled(t *testing.T) {
	tel, err := telemetry.Setup(t.Context(), telemetry.Config{Getenv: env("OTEL_SDK_DISABLED", "true",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER", "console")})
	if err != nil || tel.TracingEnabled() || tel.MetricsEnabled() {
		t.Fatalf("tracing %v metrics %v err %v: want off", tel.TracingEnabled(), tel.MetricsEnabled(), err)
	}
}

func TestSetupBadEnv(t *testing.T) {
	_, err := telemetry.Setup(t.Context(), telemetry.Config{Getenv: env("OTEL_METRICS_EXPORTER", "prometheus")})
	var ee *telemetry.EnvError
	if !errors.As(err, &ee) || ee.Var != "OTEL_METRICS_EXPORTER" || !strings.Contains(err.Error(), "OTEL_METRICS_EXPORTER") {
		t.Fatalf("error %v, want one naming OTEL_METRICS_EXPORTER", err)
	}
}

// TestSetupConsole checks console writes JSON to the given stderr and
// nothing to stdout, which is the skill's.
func TestSetupConsole(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	var stderr bytes.Buffer
	tel, err := telemetry.Setup(t.Context(), telemetry.Config{Stderr: &stderr, ServiceVersion: "v1.2.3",
		Getenv: env("OTEL_TRACES_EXPORTER", "console", "OTEL_METRICS_EXPORTER", "console")})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.TracingEnabled() || !tel.MetricsEnabled() {
		t.Fatal("console: not enabled")
	}
	if err := exercise(t, tel); err != nil {
		t.Fatal(err)
	}
	os.Stdout = stdout
	w.Close()
	leaked, _ := io.ReadAll(r)
	if len(leaked) != 0 {
		t.Errorf("stdout got %q", leaked)
	}
	for _, want := range []string{`"Name":"skill.test"`, `"test_total"`, `"Value":"skillrun"`, `"Value":"v1.2.3"`, telemetry.Scope} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%.2000s", want, stderr.String())
		}
	}
}

// receiver is an OTLP/HTTP collector in the test.
type receiver struct {
	mu      sync.Mutex
	spans   []string // span names
	metrics []string // metric names
	res     map[string]string
	status  int // answer with this instead of 200, when set
}

func newReceiver(t *testing.T) (*receiver, *httptest.Server) {
	rc := &receiver{res: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	return rc, srv
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.status != 0 {
		w.WriteHeader(rc.status)
		return
	}
	switch r.URL.Path {
	case "/v1/traces":
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			rc.resource(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					rc.spans = append(rc.spans, s.Name)
				}
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
					rc.metrics = append(rc.metrics, m.Name)
				}
			}
		}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (rc *receiver) resource(kvs []*commonpb.KeyValue) {
	for _, kv := range kvs {
		rc.res[kv.Key] = kv.GetValue().GetStringValue()
	}
}

func TestSetupOTLPHTTP(t *testing.T) {
	rc, srv := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip") // read by the exporter itself
	tel, err := telemetry.Setup(t.Context(), telemetry.Config{ServiceVersion: "v9", Getenv: env(
		"OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL, "OTEL_RESOURCE_ATTRIBUTES", "team=sec")})
	if err != nil {
		t.Fatal(err)
	}
	if err := exercise(t, tel); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.spans) != 1 || rc.spans[0] != "skill.test" || len(rc.metrics) != 1 || rc.metrics[0] != "test_total" {
		t.Fatalf("received spans %v metrics %v", rc.spans, rc.metrics)
	}
	for k, v := range map[string]string{"service.name": "skillrun", "service.version": "v9", "team": "sec"} {
		if rc.res[k] != v {
			t.Errorf("resource %s = %q, want %q", k, rc.res[k], v)
		}
	}
	if rc.res["service.instance.id"] == "" {
		t.Error("no service.instance.id")
	}
}

// TestExportErrorsLogged checks a failed export reaches the logger, and
// Shutdown still returns.
func TestExportErrorsLogged(t *testing.T) {
	rc, srv := newReceiver(t)
	rc.status = http.StatusBadRequest
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	tel, err := telemetry.Setup(t.Context(), telemetry.Config{Logger: log, Getenv: env(
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/v1/traces")})
	if err != nil {
		t.Fatal(err)
	}
	_ = exercise(t, tel)
	if !strings.Contains(logs.String(), "telemetry: export failed") {
		t.Fatalf("log:\n%s", logs.String())
	}
}

// TestShutdownBounded checks a collector that never answers delays
// Shutdown only as long as its context allows.
func TestShutdownBounded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accept and say nothing
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tel, err := telemetry.Setup(t.Context(), telemetry.Config{Getenv: env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+l.Addr().String())})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tel.Tracer().Start(t.Context(), "x")
	span.End()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = tel.Shutdown(ctx)
	if took := time.Since(start); took > 3*time.Second || err == nil {
		t.Fatalf("Shutdown took %s, err %v: want a quick error", took, err)
	}
}

// traceService is an OTLP/gRPC collector in the test.
type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	got chan string
}

func (s *traceService) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				s.got <- sp.Name
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func TestSetupOTLPGRPC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := &traceService{got: make(chan string, 10)}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, svc)
	go srv.Serve(l)
	defer srv.Stop()
	tel, err := telemetry.Setup(t.Context(), telemetry.Config{Getenv: env(
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+l.Addr().String(), "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_METRICS_EXPORTER", "none")})
	if err != nil {
		t.Fatal(err)
	}
	if tel.MetricsEnabled() {
		t.Error("metrics on with OTEL_METRICS_EXPORTER=none")
	}
	if err := exercise(t, tel); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-svc.got:
		if name != "skill.test" {
			t.Fatalf("span %q", name)
		}
	default:
		t.Fatal("no span reached the gRPC collector by the end of Shutdown")
	}
}

// BenchmarkSpanOff is what a span costs with telemetry off: ids, no
// recording. A tool call makes two.
func BenchmarkSpanOff(b *testing.B) {
	tracer := telemetry.Off().Tracer()
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		_, span := tracer.Start(ctx, "x")
		span.End()
	}
}
