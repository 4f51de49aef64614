package main

import (
	"strings"
	"testing"
)

// TestExecTelemetry runs exec to a setup failure (no skill there): the
// telemetry environment and the traceparent are checked, and what was
// traced is flushed on that path too.
func TestExecTelemetry(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"bad exporter: refused, naming the variable", []string{"OTEL_TRACES_EXPORTER", "zipkin"}, nil,
			exitSetup, []string{`skillrun: telemetry: OTEL_TRACES_EXPORTER="zipkin": want otlp, console or none`}},
		{"bad --traceparent: a usage error", nil, []string{"--traceparent", "00-xyz"},
			exitUsage, []string{`--traceparent "00-xyz"`}},
		{"bad TRACEPARENT: ignored with a warning", []string{"TRACEPARENT", "junk"}, nil,
			exitSetup, []string{"ignoring TRACEPARENT", "load skill"}},
		{"console: the root span reaches stderr on a setup failure", []string{"OTEL_TRACES_EXPORTER", "console", "TRACEPARENT", tp}, nil,
			exitSetup, []string{`"Name":"skill.invocation"`, `"TraceID":"4bf92f3577b34da6a3ce929d0e0e4736"`, `"Value":"invalid"`}},
		{"--traceparent wins over TRACEPARENT", []string{"OTEL_TRACES_EXPORTER", "console", "TRACEPARENT", "junk"}, []string{"--traceparent", tp},
			exitSetup, []string{`"TraceID":"4bf92f3577b34da6a3ce929d0e0e4736"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i+1 < len(tt.env); i += 2 {
				t.Setenv(tt.env[i], tt.env[i+1])
			}
			args := append([]string{"--root", t.TempDir(), "exec"}, tt.args...)
			code, stdout, stderr := run(t, append(args, t.TempDir()+"/no-skill")...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tt.wantCode, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q: it is the skill's", stdout)
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %s:\n%s", want, stderr)
				}
			}
		})
	}
}
