package telemetry

import (
	"net/url"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
)

// Exporter is an exporter kind of OTEL_TRACES_EXPORTER and
// OTEL_METRICS_EXPORTER.
type Exporter string

// The exporter kinds Setup builds. "none" is the absence of any.
const (
	ExporterOTLP    Exporter = "otlp"
	ExporterConsole Exporter = "console" // JSON lines on stderr, never stdout: that is the skill's
)

// Protocol is an OTLP transport of OTEL_EXPORTER_OTLP_PROTOCOL.
type Protocol string

// The OTLP protocols the Go exporters speak; http/json is not one of them.
const (
	ProtocolHTTP Protocol = "http/protobuf"
	ProtocolGRPC Protocol = "grpc"
)

// Signal is how one signal, traces or metrics, is exported.
type Signal struct {
	// Exporters in the order named, without repeats; empty means none.
	Exporters []Exporter
	// Protocol is the OTLP transport, set when Exporters has otlp.
	Protocol Protocol
	// Endpoint is the URL the OTLP exporter is given: the per-signal
	// variable as it is, or the generic one with the signal's path
	// (/v1/traces, /v1/metrics) over HTTP. "" leaves the exporter's
	// default, localhost.
	Endpoint string
}

// Enabled reports whether anything exports the signal.
func (s Signal) Enabled() bool { return len(s.Exporters) > 0 }

// Settings is what the OTEL_* environment asks for: a plain value, so the
// decision can be tested and printed apart from building any exporter.
type Settings struct {
	Traces, Metrics Signal
	// Resource holds OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME as
	// service.name: a later key wins.
	Resource []attribute.KeyValue
}

// signalEnv names one signal's variables.
type signalEnv struct {
	exporter, protocol, endpoint string
	path                         string // appended to the generic endpoint over HTTP
	kinds                        string // the accepted exporter names, for errors
}

var (
	tracesEnv  = signalEnv{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces", "otlp, console or none"}
	metricsEnv = signalEnv{"OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics", "otlp, console or none"}
)

// ParseEnv reads the OTEL_* variables through getenv. Unlike the
// OpenTelemetry default of otlp, a signal whose exporter variable is unset
// is exported only when an OTLP endpoint is set for it (DESIGN §10): a
// sandbox host must not start dialling localhost because nobody said
// otherwise. OTEL_SDK_DISABLED=true turns everything off and nothing else
// is read. A variable is checked when it is used; a value Setup cannot use
// is an *EnvError naming it.
func ParseEnv(getenv func(string) string) (Settings, error) {
	switch v := strings.TrimSpace(getenv("OTEL_SDK_DISABLED")); strings.ToLower(v) {
	case "true":
		return Settings{}, nil
	case "", "false":
	default:
		return Settings{}, &EnvError{Var: "OTEL_SDK_DISABLED", Value: v, Want: "true or false"}
	}
	var s Settings
	var err error
	if s.Traces, err = parseSignal(getenv, tracesEnv); err != nil {
		return Settings{}, err
	}
	if s.Metrics, err = parseSignal(getenv, metricsEnv); err != nil {
		return Settings{}, err
	}
	if s.Resource, err = parseResource(getenv); err != nil {
		return Settings{}, err
	}
	return s, nil
}

func parseSignal(getenv func(string) string, e signalEnv) (Signal, error) {
	endpointVar, endpoint := e.endpoint, strings.TrimSpace(getenv(e.endpoint))
	if endpoint == "" {
		endpointVar, endpoint = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	var s Signal
	raw := strings.TrimSpace(getenv(e.exporter))
	if raw == "" {
		if endpoint == "" {
			return Signal{}, nil
		}
		s.Exporters = []Exporter{ExporterOTLP}
	} else {
		var err error
		if s.Exporters, err = parseExporters(e, raw); err != nil {
			return Signal{}, err
		}
	}
	if !slices.Contains(s.Exporters, ExporterOTLP) {
		return s, nil
	}
	protoVar, proto := e.protocol, strings.TrimSpace(getenv(e.protocol))
	if proto == "" {
		protoVar, proto = "OTEL_EXPORTER_OTLP_PROTOCOL", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch Protocol(strings.ToLower(proto)) {
	case "", ProtocolHTTP:
		s.Protocol = ProtocolHTTP
	case ProtocolGRPC:
		s.Protocol = ProtocolGRPC
	default:
		return Signal{}, &EnvError{Var: protoVar, Value: proto, Want: "http/protobuf or grpc (http/json is not supported)"}
	}
	if endpoint == "" {
		return s, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Signal{}, &EnvError{Var: endpointVar, Value: endpoint, Want: "an http:// or https:// URL"}
	}
	// The generic endpoint is a base the HTTP exporter appends the signal's
	// path to; a per-signal one is used as it is (OTLP exporter spec).
	if endpointVar == "OTEL_EXPORTER_OTLP_ENDPOINT" && s.Protocol == ProtocolHTTP {
		u.Path = strings.TrimSuffix(u.Path, "/") + e.path
		u.RawPath = ""
	}
	s.Endpoint = u.String()
	return s, nil
}

// parseExporters reads a comma-separated exporter list; "none" stands
// alone.
func parseExporters(e signalEnv, raw string) ([]Exporter, error) {
	bad := &EnvError{Var: e.exporter, Value: raw, Want: e.kinds}
	var out []Exporter
	none := false
	for name := range strings.SplitSeq(raw, ",") {
		switch x := Exporter(strings.ToLower(strings.TrimSpace(name))); x {
		case "":
		case "none":
			none = true
		case ExporterOTLP, ExporterConsole:
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
		default:
			return nil, bad
		}
	}
	if none && len(out) > 0 {
		bad.Want = "none alone, or a list of otlp and console"
		return nil, bad
	}
	return out, nil
}

// parseResource reads OTEL_RESOURCE_ATTRIBUTES (key=value pairs, values
// percent-encoded as W3C Baggage values are) and OTEL_SERVICE_NAME.
func parseResource(getenv func(string) string) ([]attribute.KeyValue, error) {
	var kvs []attribute.KeyValue
	raw := getenv("OTEL_RESOURCE_ATTRIBUTES")
	for pair := range strings.SplitSeq(raw, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if !ok || k == "" || err != nil {
			return nil, &EnvError{Var: "OTEL_RESOURCE_ATTRIBUTES", Value: raw, Want: "comma-separated key=value pairs with percent-encoded values"}
		}
		kvs = append(kvs, attribute.String(k, val))
	}
	if name := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); name != "" {
		kvs = append(kvs, attribute.String("service.name", name))
	}
	return kvs, nil
}
