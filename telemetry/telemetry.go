package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of skillrun's spans and metrics.
const Scope = "github.com/skillrun/skillrun/broker"

// ShutdownTimeout bounds Shutdown: an unreachable collector delays the end
// of an invocation by at most this long.
const ShutdownTimeout = 5 * time.Second

// Telemetry is one process's tracer and meter providers. The zero of it —
// a nil *Telemetry, or Off — traces nothing and measures nothing, but its
// spans still carry ids of their own (see Tracer).
type Telemetry struct {
	tp               trace.TracerProvider
	mp               metric.MeterProvider
	tracing, metrics bool
	shutdowns        []func(context.Context) error

	once sync.Once
	err  error
}

// Config is what Setup needs besides the environment.
type Config struct {
	// Getenv reads the environment; nil means os.Getenv. Setup decides
	// with it which exporters to build and where they send; finer settings
	// (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, certificates,
	// OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_METRIC_EXPORT_INTERVAL) are
	// read by the OpenTelemetry SDK and exporters from the process
	// environment, as they document.
	Getenv func(string) string
	// Stderr gets the console exporters' JSON; nil means os.Stderr.
	Stderr io.Writer
	// Logger gets exporter errors; nil discards them.
	Logger *slog.Logger
	// ServiceVersion is the resource's service.version; "" leaves it out.
	ServiceVersion string
}

// Off returns telemetry that exports nothing and starts nothing.
func Off() *Telemetry { return nil }

// New wraps providers built elsewhere: tests with an in-memory exporter,
// a program embedding skillrun. A nil provider leaves that signal off.
// Shutdown shuts both down.
func New(tp *sdktrace.TracerProvider, mp *sdkmetric.MeterProvider) *Telemetry {
	t := &Telemetry{}
	if tp != nil {
		t.tp, t.tracing = tp, true
		t.shutdowns = append(t.shutdowns, tp.Shutdown)
	}
	if mp != nil {
		t.mp, t.metrics = mp, true
		t.shutdowns = append(t.shutdowns, mp.Shutdown)
	}
	return t
}

// Setup builds the providers the OTEL_* environment asks for (ParseEnv).
// With nothing asked for it returns Off: no exporter, no goroutine, no
// global state touched. Otherwise exporter errors are routed to
// cfg.Logger through the OpenTelemetry global error handler — the SDK
// reports them nowhere else — and the caller must call Shutdown.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := ParseEnv(cfg.Getenv)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if !s.Traces.Enabled() && !s.Metrics.Enabled() {
		return Off(), nil
	}
	routeErrors(cfg.Logger)
	// Both console exporters write from goroutines of their own: one lock
	// keeps their lines whole and a non-file Stderr safe.
	cfg.Stderr = &lockedWriter{w: cfg.Stderr}
	res, err := newResource(ctx, s.Resource, cfg.ServiceVersion)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	var tp *sdktrace.TracerProvider
	var mp *sdkmetric.MeterProvider
	if s.Traces.Enabled() {
		if tp, err = newTracerProvider(ctx, s.Traces, res, cfg.Stderr); err != nil {
			return nil, err
		}
	}
	if s.Metrics.Enabled() {
		if mp, err = newMeterProvider(ctx, s.Metrics, res, cfg.Stderr); err != nil {
			if tp != nil {
				_ = tp.Shutdown(ctx)
			}
			return nil, err
		}
	}
	return New(tp, mp), nil
}

// routeErrors sends the SDK's errors and diagnostics to log: the global
// error handler is the only way the SDK reports a failed export.
func routeErrors(log *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("telemetry: export failed", "err", err)
	}))
	otel.SetLogger(logr.FromSlogHandler(log.Handler()))
}

// newResource describes this process. service.instance.id tells apart the
// cumulative metrics of concurrent skillrun processes, which would
// otherwise be one series to a backend.
func newResource(ctx context.Context, env []attribute.KeyValue, version string) (*resource.Resource, error) {
	kvs := []attribute.KeyValue{
		attribute.String("service.name", "skillrun"),
		attribute.String("service.instance.id", uuid.NewString()),
	}
	if version != "" {
		kvs = append(kvs, attribute.String("service.version", version))
	}
	return resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(append(kvs, env...)...))
}

// Tracer is skillrun's tracer. With tracing off its spans record nothing
// but still get ids: a call's span id is its audit call_id either way.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil || t.tp == nil {
		return idTracerProvider{}.Tracer(Scope)
	}
	return t.tp.Tracer(Scope)
}

// Meter is skillrun's meter; a no-op one with metrics off.
func (t *Telemetry) Meter() metric.Meter {
	if t == nil || t.mp == nil {
		return metricnoop.NewMeterProvider().Meter(Scope)
	}
	return t.mp.Meter(Scope)
}

// TracingEnabled reports whether spans are exported.
func (t *Telemetry) TracingEnabled() bool { return t != nil && t.tracing }

// MetricsEnabled reports whether metrics are exported, so a caller can skip
// building attributes nobody reads.
func (t *Telemetry) MetricsEnabled() bool { return t != nil && t.metrics }

// Shutdown flushes and stops both providers, at most ShutdownTimeout
// (sooner if ctx ends), both at once so a slow trace collector does not
// starve the metrics. Later calls return the first call's error.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
		defer cancel()
		errs := make([]error, len(t.shutdowns))
		var wg sync.WaitGroup
		for i, f := range t.shutdowns {
			wg.Go(func() { errs[i] = f(ctx) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.err = fmt.Errorf("telemetry: shutdown: %w", err)
		}
	})
	return t.err
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
