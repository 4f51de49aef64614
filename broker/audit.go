package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Auditor receives the broker's audit rows (DESIGN §7). Record must not
// block on a slow store: the tool call goes on whether or not the row is
// written, so it returns no error; losses are the Auditor's to count.
//
// Payloads never hold raw arguments, only their hash (ArgsHash). Every row
// of a call has invocation_id, skill_id, tenant_id, tool_name, trace_id and
// call_id (the same on all rows of one call); then, by kind:
//
//	skill.tool_call_started    args_hash
//	skill.tool_call_completed  args_hash, outcome, duration_ms,
//	                           args_size_bytes, result_size_bytes
//	skill.tool_denied          reason, attempted_args_hash
//
// trace_id is also what a store keeps as the row's trace column.
type Auditor interface {
	Record(ctx context.Context, kind string, payload map[string]any)
}

// NopAuditor records nothing.
type NopAuditor struct{}

// Record does nothing.
func (NopAuditor) Record(context.Context, string, map[string]any) {}

// The audit row kinds the broker writes.
const (
	KindToolCallStarted   = "skill.tool_call_started"
	KindToolCallCompleted = "skill.tool_call_completed"
	KindToolDenied        = "skill.tool_denied"
)

// Outcomes of skill.tool_call_completed. OutcomeDenied is a denial at use
// time (a tool refusing a path swapped after its check): the call was
// dispatched, so it has a completed row, and a tool_denied row too.
const (
	OutcomeSuccess = "success"
	OutcomeError   = "error"
	OutcomeDenied  = "denied"
	OutcomeTimeout = "timeout"
)

// CanonicalJSON re-encodes a JSON value so that equal values give equal
// bytes: object keys sorted (by their UTF-8 bytes), no insignificant
// whitespace, strings re-escaped one way (no HTML escaping). Numbers keep
// their literal spelling: 1 and 1.0 stay different, as a tool may treat
// them differently. A repeated key keeps its last value, which is the one
// a tool decoding the arguments sees. Empty input is null (absent args).
func CanonicalJSON(raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) != 0 {
		return nil, errors.New("canonical json: data after the value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// encoding/json writes map keys sorted and json.Number as its text.
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ArgsHash is the hex SHA-256 of the canonical JSON of args: what audit
// rows hold instead of the arguments. Arguments that are not JSON (the
// jsonrpc server has already refused those) hash as their raw bytes.
func ArgsHash(args json.RawMessage) string {
	b, err := CanonicalJSON(args)
	if err != nil {
		b = args
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
