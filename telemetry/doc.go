// Package telemetry builds skillrun's OpenTelemetry tracer and meter
// providers from the standard OTEL_* environment (DESIGN §10). The CLI
// builds one Telemetry per process, hands it to the invocation and the
// broker, and shuts it down before exiting, whatever the outcome.
//
// # Environment
//
//	OTEL_SDK_DISABLED=true               everything off; nothing else is read
//	OTEL_TRACES_EXPORTER                 otlp, console, none, or a list of otlp and console;
//	OTEL_METRICS_EXPORTER                unset: otlp if an endpoint for the signal is set, else none
//	OTEL_EXPORTER_OTLP_ENDPOINT          base URL; over HTTP /v1/traces or /v1/metrics is appended
//	OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT  per-signal URL, used as it is; wins over the base
//	OTEL_EXPORTER_OTLP_PROTOCOL          http/protobuf (default) or grpc;
//	OTEL_EXPORTER_OTLP_{TRACES,METRICS}_PROTOCOL  per signal, wins over it
//	OTEL_SERVICE_NAME                    service.name (default skillrun)
//	OTEL_RESOURCE_ATTRIBUTES             more resource attributes, key=value,...
//
// The default differs from the OpenTelemetry one (otlp) on purpose: with
// nothing set, nothing is exported and nothing is started, and a host that
// runs untrusted code does not dial localhost:4318 unasked. console writes
// JSON lines to stderr — stdout belongs to the skill. A value that cannot
// be used (an unknown exporter, http/json, an endpoint that is no http(s)
// URL) is an *EnvError naming the variable. Headers, timeouts,
// compression, TLS files, the sampler and batch settings are read by the
// SDK and exporters themselves from the process environment.
//
// # Ids without tracing
//
// With tracing off, Tracer still returns spans with ids of their own
// (random, never all zero), continuing the trace of their parent: the
// broker takes a tool call's audit call_id and trace_id from its span
// either way, so there is one code path and the ids mean the same thing
// whether or not anything is exported.
package telemetry
