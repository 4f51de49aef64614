package broker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// TraceParent is a W3C Trace Context traceparent of version 00
// (https://www.w3.org/TR/trace-context/#traceparent-header): the trace a
// tool call belongs to and the span that is its parent.
//
// A small parser rather than go.opentelemetry.io/otel/propagation: that
// one accepts future versions (with trailing fields) as the W3C text asks
// of a general-purpose propagator, while the broker takes version 00 only
// and starts its own trace for anything else.
type TraceParent struct {
	TraceID string // 32 lowercase hex digits, not all zero
	SpanID  string // 16 lowercase hex digits, not all zero (parent-id)
	Flags   string // 2 lowercase hex digits (trace-flags)
}

// traceparentLen is the length of a version 00 traceparent:
// "00-" + 32 + "-" + 16 + "-" + 2.
const traceparentLen = 55

// ParseTraceParent parses a version 00 traceparent. Anything else — another
// version (ff is never valid, and later ones are not understood here),
// uppercase or non-hex digits, an all-zero trace or parent id, extra
// fields, surrounding space — is an error wrapping ErrInvalidTraceParent.
func ParseTraceParent(s string) (TraceParent, error) {
	if len(s) != traceparentLen {
		return TraceParent{}, fmt.Errorf("%w: length %d, want %d", ErrInvalidTraceParent, len(s), traceparentLen)
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return TraceParent{}, fmt.Errorf("%w: fields not separated by '-'", ErrInvalidTraceParent)
	}
	if s[:2] != "00" {
		return TraceParent{}, fmt.Errorf("%w: version %q, want 00", ErrInvalidTraceParent, s[:2])
	}
	tp := TraceParent{TraceID: s[3:35], SpanID: s[36:52], Flags: s[53:]}
	for _, f := range []struct{ name, v string }{{"trace-id", tp.TraceID}, {"parent-id", tp.SpanID}, {"trace-flags", tp.Flags}} {
		if !lowerHex(f.v) {
			return TraceParent{}, fmt.Errorf("%w: %s is not lowercase hex", ErrInvalidTraceParent, f.name)
		}
	}
	if allZero(tp.TraceID) || allZero(tp.SpanID) {
		return TraceParent{}, fmt.Errorf("%w: all-zero trace-id or parent-id", ErrInvalidTraceParent)
	}
	return tp, nil
}

// String is the traceparent header value.
func (tp TraceParent) String() string {
	return "00-" + tp.TraceID + "-" + tp.SpanID + "-" + tp.Flags
}

// NewTraceID returns a random trace id: 16 bytes, hex, never all zero.
func NewTraceID() string { return randomHex(16) }

// ValidTraceID reports whether id can be a traceparent's trace-id.
func ValidTraceID(id string) bool {
	return len(id) == 32 && lowerHex(id) && !allZero(id)
}

func newSpanID() string { return randomHex(8) }

// randomHex returns n random bytes as hex, never all zero (invalid in a
// traceparent). crypto/rand.Read does not fail (it panics rather).
func randomHex(n int) string {
	b := make([]byte, n)
	for {
		_, _ = rand.Read(b)
		for _, c := range b {
			if c != 0 {
				return hex.EncodeToString(b)
			}
		}
	}
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
