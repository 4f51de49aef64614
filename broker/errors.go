package broker

import (
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/tools"
)

var (
	// ErrSocketCollision means the socket path already exists. Whatever is
	// there (someone's live socket, a stale one, a file) is left alone.
	ErrSocketCollision = errors.New("broker socket path already exists")
	// ErrInvalidInvocationID means an id that cannot safely name a socket.
	ErrInvalidInvocationID = errors.New("invalid invocation id")
	// ErrConfig means a Config that New cannot build a broker from.
	ErrConfig = errors.New("invalid broker config")
	// ErrUncheckedTool means a registered tool exercises a capability but
	// does not implement Preparer: it would run with unchecked arguments.
	ErrUncheckedTool = errors.New("tool exercises a capability without an argument check")
	// ErrInvalidTraceParent means a traceparent that is not a valid W3C
	// version 00 one. A tool call carrying it is not refused: the broker
	// uses the invocation's own trace instead.
	ErrInvalidTraceParent = errors.New("invalid traceparent")
)

// CodeToolError is the JSON-RPC code of a ToolError, from the range the
// specification leaves to implementations (-32000 to -32099).
const CodeToolError = -32000

// messageToolError is the error message of every ToolError; the reason is
// in data, as with denials.
const messageToolError = "tool_error"

// ToolError is a tool that was allowed, ran, and failed in a way the skill
// may be told: the file is not there, is not a regular file, is not
// readable. Its fields are fixed words and names, never host state. Other
// failures stay internal_error, their text on the host.
//
// The jsonrpc error table does not know this code yet; until it does, a Go
// client turns the error back into a *ToolError with AsToolError.
type ToolError struct {
	Reason  string `json:"reason"`
	Tool    string `json:"tool"`
	SkillID string `json:"skill_id"`
}

// The ToolError reasons.
const (
	ReasonNotFound   = "not_found"
	ReasonNotRegular = "not_regular_file"
	ReasonPermission = "permission_denied"
)

// toolErrorTable is the one place tool failures and ToolError reasons meet,
// in both directions.
var toolErrorTable = []struct {
	reason string
	err    error
}{
	{ReasonNotFound, fs.ErrNotExist},
	{ReasonNotRegular, tools.ErrNotRegular},
	{ReasonPermission, fs.ErrPermission},
}

func (e *ToolError) Error() string { return "tool_error: " + e.Tool + ": " + e.Reason }

// Is makes errors.Is(err, fs.ErrNotExist) true for a not_found ToolError,
// on either side of the socket.
func (e *ToolError) Is(target error) bool {
	for _, row := range toolErrorTable {
		if row.reason == e.Reason {
			return row.err == target
		}
	}
	return false
}

// newToolError classifies a tool's failure, or returns nil when it is not
// one the skill may be told about.
func newToolError(tool, skillID string, err error) *ToolError {
	if f, ok := tools.AsFailure(err); ok {
		return &ToolError{Reason: f.Reason, Tool: tool, SkillID: skillID}
	}
	for _, row := range toolErrorTable {
		if errors.Is(err, row.err) {
			return &ToolError{Reason: row.reason, Tool: tool, SkillID: skillID}
		}
	}
	return nil
}

// wire is e as the jsonrpc server sends it.
func (e *ToolError) wire() *jsonrpc.RemoteError {
	data, _ := json.Marshal(e) // three strings cannot fail to marshal
	return &jsonrpc.RemoteError{Code: CodeToolError, Message: messageToolError, Data: data}
}

// AsToolError finds the ToolError in err: a *ToolError itself, or the
// -32000 error a jsonrpc client returns for one.
func AsToolError(err error) (*ToolError, bool) {
	var te *ToolError
	if errors.As(err, &te) {
		return te, true
	}
	var re *jsonrpc.RemoteError
	if !errors.As(err, &re) || re.Code != CodeToolError {
		return nil, false
	}
	te = &ToolError{}
	if json.Unmarshal(re.Data, te) != nil || te.Reason == "" {
		return nil, false
	}
	return te, true
}
