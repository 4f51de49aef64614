package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
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

// RawAuditor is an Auditor that also takes a payload already encoded, so
// the broker's rows skip the map and its encoding by reflection: the
// broker encodes them from structs whose bytes are exactly what
// json.Marshal gives for the map Record would have got. traceID is the
// payload's trace_id.
type RawAuditor interface {
	Auditor
	RecordJSON(ctx context.Context, kind, traceID string, payload []byte)
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
	b := []byte(args)
	if !isCanonical(args) {
		var err error
		if b, err = CanonicalJSON(args); err != nil {
			b = args
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// isCanonical reports whether raw is its own CanonicalJSON, which is how
// a skill's arguments usually come: valid UTF-8 JSON without whitespace,
// every object's keys in increasing byte order, and no string the encoder
// would write otherwise (none holds an escape, U+2028 or U+2029). Then
// ArgsHash need not decode and re-encode them (FuzzArgsHash).
func isCanonical(raw []byte) bool {
	if len(raw) == 0 || bytes.IndexByte(raw, '\\') >= 0 || bytes.Contains(raw, []byte("\u2028")) ||
		bytes.Contains(raw, []byte("\u2029")) || !utf8.Valid(raw) || !json.Valid(raw) {
		return false
	}
	// One entry per open object or array: the object's last key (nil
	// before the first), or isArray.
	var stack [][]byte
	key := false // the next string is a key
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\r', '\n':
			return false
		case '{':
			stack = append(stack, nil)
			key = true
		case '[':
			stack = append(stack, isArray)
		case '}', ']':
			stack = stack[:len(stack)-1]
			key = false
		case ',':
			key = len(stack) > 0 && !isArrayFrame(stack[len(stack)-1])
		case '"':
			n := bytes.IndexByte(raw[i+1:], '"')
			if key {
				k := raw[i+1 : i+1+n]
				if last := stack[len(stack)-1]; last != nil && bytes.Compare(last, k) >= 0 {
					return false
				}
				stack[len(stack)-1] = k
				key = false
			}
			i += n + 1
		}
	}
	return true
}

// isArray marks an array on isCanonical's stack; no key can be it.
var isArray = []byte{0}

func isArrayFrame(b []byte) bool { return len(b) == 1 && &b[0] == &isArray[0] }
