package enforce

import (
	"errors"
	"fmt"
)

// Reason is the machine-readable cause of a denial, as it appears in the
// wire error's data.reason and in audit rows.
type Reason string

// The denial reasons of DESIGN §5. The set is closed: a client decoding a
// reason it does not know keeps the string but matches no sentinel.
const (
	ReasonToolNotAllowed    Reason = "tool_not_in_allowed_tools"
	ReasonToolDisallowed    Reason = "tool_in_disallowed_tools"
	ReasonScopeViolation    Reason = "scope_violation"
	ReasonFileViolation     Reason = "file_violation"
	ReasonDomainViolation   Reason = "domain_violation"
	ReasonCommandNotAllowed Reason = "command_not_allowed"
	ReasonRequestTooLarge   Reason = "request_too_large"
	ReasonRateLimited       Reason = "rate_limited"
	ReasonQuarantined       Reason = "quarantined"
	ReasonApprovalDenied    Reason = "approval_denied"
	ReasonUnknownTool       Reason = "unknown_tool"
)

// Sentinels, one per reason. Test with errors.Is; a *Denial matches the
// sentinel of its reason, on either side of the socket.
var (
	ErrToolNotAllowed    = errors.New("tool not in allowed_tools")
	ErrToolDisallowed    = errors.New("tool in disallowed_tools")
	ErrScopeViolation    = errors.New("memory path outside allowed_memory_scopes")
	ErrFileViolation     = errors.New("file path outside x-allowed-files")
	ErrDomainViolation   = errors.New("url outside x-allowed-domains")
	ErrCommandNotAllowed = errors.New("command not allowed by any Bash rule")
	ErrRequestTooLarge   = errors.New("request too large")
	ErrRateLimited       = errors.New("rate limit exceeded")
	ErrQuarantined       = errors.New("skill quarantined")
	ErrApprovalDenied    = errors.New("approval denied")
	ErrUnknownTool       = errors.New("unknown tool")

	// ErrLoaderDefect marks a grant plan wider than the declaration it came
	// from: skillrun's fault, never the skill's (DESIGN §3).
	ErrLoaderDefect = errors.New("loader defect")
	// ErrInvalidPolicy marks a declaration that cannot be compiled (a bad
	// glob, an unknown tool name, a malformed Bash rule).
	ErrInvalidPolicy = errors.New("invalid policy")
)

// reasonTable is the one place reasons, wire classes and sentinels meet.
// The class is the JSON-RPC error message; tool denials share one class.
var reasonTable = []struct {
	reason Reason
	class  string
	err    error
}{
	{ReasonToolNotAllowed, "tool_not_allowed", ErrToolNotAllowed},
	{ReasonToolDisallowed, "tool_not_allowed", ErrToolDisallowed},
	{ReasonScopeViolation, "scope_violation", ErrScopeViolation},
	{ReasonFileViolation, "file_violation", ErrFileViolation},
	{ReasonDomainViolation, "domain_violation", ErrDomainViolation},
	{ReasonCommandNotAllowed, "command_not_allowed", ErrCommandNotAllowed},
	{ReasonRequestTooLarge, "request_too_large", ErrRequestTooLarge},
	{ReasonRateLimited, "rate_limited", ErrRateLimited},
	{ReasonQuarantined, "quarantined", ErrQuarantined},
	{ReasonApprovalDenied, "approval_denied", ErrApprovalDenied},
	{ReasonUnknownTool, "unknown_tool", ErrUnknownTool},
}

// Reasons lists every known reason in table order.
func Reasons() []Reason {
	out := make([]Reason, len(reasonTable))
	for i, r := range reasonTable {
		out[i] = r.reason
	}
	return out
}

// Class is the error class sent as the JSON-RPC error message for r.
// An unknown reason is its own class.
func (r Reason) Class() string {
	for _, e := range reasonTable {
		if e.reason == r {
			return e.class
		}
	}
	return string(r)
}

// Sentinel is the Go error that r stands for, or nil for an unknown reason.
func (r Reason) Sentinel() error {
	for _, e := range reasonTable {
		if e.reason == r {
			return e.err
		}
	}
	return nil
}

// Denial is an enforcement refusal: which reason, which tool, and a detail
// for humans (the canonical path, the host, the offending command part).
// The detail never goes into audit rows raw; it may hold argument text.
type Denial struct {
	Reason  Reason
	Tool    string
	SkillID string
	Detail  string
}

func (d *Denial) Error() string {
	s := string(d.Reason)
	if d.Tool != "" {
		s += ": " + d.Tool
	}
	if d.Detail != "" {
		s += ": " + d.Detail
	}
	return s
}

// Is makes errors.Is(d, ErrScopeViolation) true for a scope denial.
func (d *Denial) Is(target error) bool {
	s := d.Reason.Sentinel()
	return s != nil && s == target
}

// Deny builds a *Denial.
func Deny(reason Reason, tool, format string, args ...any) *Denial {
	return &Denial{Reason: reason, Tool: tool, Detail: fmt.Sprintf(format, args...)}
}

// AsDenial returns the *Denial inside err, if any.
func AsDenial(err error) (*Denial, bool) {
	var d *Denial
	ok := errors.As(err, &d)
	return d, ok
}
