package skill

import (
	"errors"
	"fmt"
	"strings"
)

// Severity orders diagnostics: errors stop a skill from loading, warnings
// are reported and kept.
type Severity int

const (
	SeverityWarning Severity = iota
	SeverityError
)

func (s Severity) String() string {
	if s == SeverityError {
		return "error"
	}
	return "warning"
}

// MarshalText makes Severity readable in JSON output.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Diagnostic is one finding about a SKILL.md, positioned at a line.
type Diagnostic struct {
	File     string   `json:"file"`
	Line     int      `json:"line"` // 1-based line in File; 0 when the finding is about the file as a whole
	Field    string   `json:"field"`
	Message  string   `json:"message"`
	Severity Severity `json:"severity"`
}

// String renders "FILE:LINE: field: message", the form editors jump to.
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		if d.Line > 0 {
			fmt.Fprintf(&b, ":%d", d.Line)
		}
		b.WriteString(": ")
	}
	if d.Field != "" {
		b.WriteString(d.Field)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

var (
	// ErrInvalid wraps every *LoadError: the skill's declaration is wrong.
	ErrInvalid = errors.New("invalid skill")
	// ErrNotSkill means the folder has no SKILL.md.
	ErrNotSkill = errors.New("not a skill folder")
	// ErrTreeTooLarge means the skill tree exceeds the hashing limits.
	ErrTreeTooLarge = errors.New("skill tree too large")
)

// LoadError carries every error-level diagnostic of a failed load, plus the
// warnings found on the way, so one run shows the author everything.
type LoadError struct {
	Diagnostics []Diagnostic
}

func (e *LoadError) Error() string {
	for _, d := range e.Diagnostics {
		if d.Severity == SeverityError {
			return d.String()
		}
	}
	return "invalid skill"
}

// Errors returns only the error-level diagnostics.
func (e *LoadError) Errors() []Diagnostic {
	var out []Diagnostic
	for _, d := range e.Diagnostics {
		if d.Severity == SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// Unwrap lets callers test errors.Is(err, ErrInvalid).
func (e *LoadError) Unwrap() error { return ErrInvalid }
