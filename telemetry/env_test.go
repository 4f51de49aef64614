package telemetry_test

import (
	"errors"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/skillrun/skillrun/telemetry"
)

// env is a fake environment.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

var (
	none    = telemetry.Signal{}
	console = telemetry.Signal{Exporters: []telemetry.Exporter{telemetry.ExporterConsole}}
)

func otlp(p telemetry.Protocol, endpoint string) telemetry.Signal {
	return telemetry.Signal{Exporters: []telemetry.Exporter{telemetry.ExporterOTLP}, Protocol: p, Endpoint: endpoint}
}

func TestParseEnv(t *testing.T) {
	const base = "http://127.0.0.1:4318"
	tests := []struct {
		name            string
		env             []string
		traces, metrics telemetry.Signal
	}{
		{"nothing set: none", nil, none, none},
		{"endpoint: otlp over http for both, signal paths appended",
			[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", base},
			otlp(telemetry.ProtocolHTTP, base+"/v1/traces"), otlp(telemetry.ProtocolHTTP, base+"/v1/metrics")},
		{"endpoint with a path and a trailing slash",
			[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", base + "/otel/"},
			otlp(telemetry.ProtocolHTTP, base+"/otel/v1/traces"), otlp(telemetry.ProtocolHTTP, base+"/otel/v1/metrics")},
		{"per-signal endpoint: that signal only, used as it is",
			[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", base + "/custom"},
			otlp(telemetry.ProtocolHTTP, base+"/custom"), none},
		{"per-signal endpoint wins over the base",
			[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", base, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://m.example:4318/x"},
			otlp(telemetry.ProtocolHTTP, base+"/v1/traces"), otlp(telemetry.ProtocolHTTP, "https://m.example:4318/x")},
		{"grpc: the endpoint as it is",
			[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
			otlp(telemetry.ProtocolGRPC, "http://127.0.0.1:4317"), otlp(telemetry.ProtocolGRPC, "http://127.0.0.1:4317")},
		{"per-signal protocol wins",
			[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", base, "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"},
			otlp(telemetry.ProtocolGRPC, base), otlp(telemetry.ProtocolHTTP, base+"/v1/metrics")},
		{"otlp without an endpoint: the exporter's default",
			[]string{"OTEL_TRACES_EXPORTER", "otlp"},
			otlp(telemetry.ProtocolHTTP, ""), none},
		{"exporter none wins over an endpoint",
			[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", base, "OTEL_TRACES_EXPORTER", "none", "OTEL_METRICS_EXPORTER", "none"},
			none, none},
		{"console, case and space forgiven",
			[]string{"OTEL_TRACES_EXPORTER", " Console ", "OTEL_METRICS_EXPORTER", "console"},
			console, console},
		{"a list, repeats dropped",
			[]string{"OTEL_TRACES_EXPORTER", "console,otlp,console", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
			telemetry.Signal{Exporters: []telemetry.Exporter{telemetry.ExporterConsole, telemetry.ExporterOTLP}, Protocol: telemetry.ProtocolGRPC}, none},
		{"disabled: nothing else is read",
			[]string{"OTEL_SDK_DISABLED", "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT", base, "OTEL_TRACES_EXPORTER", "bogus"},
			none, none},
		{"not disabled",
			[]string{"OTEL_SDK_DISABLED", "false", "OTEL_TRACES_EXPORTER", "console"},
			console, none},
		{"a protocol is not checked when nothing uses it",
			[]string{"OTEL_TRACES_EXPORTER", "console", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
			console, none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := telemetry.ParseEnv(env(tt.env...))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Traces, tt.traces) || !reflect.DeepEqual(s.Metrics, tt.metrics) {
				t.Fatalf("traces %+v metrics %+v\nwant   %+v metrics %+v", s.Traces, s.Metrics, tt.traces, tt.metrics)
			}
		})
	}
}

func TestParseEnvErrors(t *testing.T) {
	tests := []struct {
		env     []string
		wantVar string
	}{
		{[]string{"OTEL_TRACES_EXPORTER", "jaeger"}, "OTEL_TRACES_EXPORTER"},
		{[]string{"OTEL_METRICS_EXPORTER", "prometheus"}, "OTEL_METRICS_EXPORTER"},
		{[]string{"OTEL_TRACES_EXPORTER", "none,console"}, "OTEL_TRACES_EXPORTER"},
		{[]string{"OTEL_SDK_DISABLED", "yes"}, "OTEL_SDK_DISABLED"},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://x:1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "udp"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{[]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ftp://host/x"}, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{[]string{"OTEL_RESOURCE_ATTRIBUTES", "team"}, "OTEL_RESOURCE_ATTRIBUTES"},
		{[]string{"OTEL_RESOURCE_ATTRIBUTES", "a=%zz"}, "OTEL_RESOURCE_ATTRIBUTES"},
	}
	for _, tt := range tests {
		t.Run(tt.wantVar, func(t *testing.T) {
			_, err := telemetry.ParseEnv(env(tt.env...))
			var ee *telemetry.EnvError
			if !errors.As(err, &ee) || ee.Var != tt.wantVar || !errors.Is(err, telemetry.ErrInvalidEnv) {
				t.Fatalf("error %v, want an EnvError naming %s", err, tt.wantVar)
			}
		})
	}
}

func TestParseEnvResource(t *testing.T) {
	s, err := telemetry.ParseEnv(env("OTEL_RESOURCE_ATTRIBUTES", "team=sec%20ops, deployment.environment=prod,,service.name=x",
		"OTEL_SERVICE_NAME", "skillrun-ci"))
	if err != nil {
		t.Fatal(err)
	}
	want := []attribute.KeyValue{attribute.String("team", "sec ops"), attribute.String("deployment.environment", "prod"),
		attribute.String("service.name", "x"), attribute.String("service.name", "skillrun-ci")}
	if !reflect.DeepEqual(s.Resource, want) {
		t.Fatalf("resource %v, want %v", s.Resource, want)
	}
}
