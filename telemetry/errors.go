package telemetry

import (
	"errors"
	"fmt"
)

// ErrInvalidEnv is wrapped by every EnvError, for errors.Is.
var ErrInvalidEnv = errors.New("invalid telemetry environment")

// EnvError is an OTEL_* variable whose value Setup cannot use. A typo in an
// exporter name is refused rather than read as "none": an operator who set
// it expects telemetry, and silence would hide the mistake.
type EnvError struct {
	Var   string // the variable, e.g. OTEL_TRACES_EXPORTER
	Value string // its value as set
	Want  string // what would be accepted
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("%s=%q: want %s", e.Var, e.Value, e.Want)
}

// Unwrap makes errors.Is(err, ErrInvalidEnv) true.
func (e *EnvError) Unwrap() error { return ErrInvalidEnv }
