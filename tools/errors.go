package tools

import "errors"

// Failure is a tool that was allowed, ran, and failed in a way the skill
// may be told, with a fixed reason word (old_not_found, timeout, …). The
// broker sends it as a tool_error with that reason; the message stays on
// the host, since it may hold host state.
type Failure struct {
	Reason string
	Err    error
}

func (f *Failure) Error() string {
	if f.Err == nil {
		return f.Reason
	}
	return f.Reason + ": " + f.Err.Error()
}

func (f *Failure) Unwrap() error { return f.Err }

// Fail builds a *Failure.
func Fail(reason string, err error) error { return &Failure{Reason: reason, Err: err} }

// AsFailure finds the *Failure in err.
func AsFailure(err error) (*Failure, bool) {
	var f *Failure
	ok := errors.As(err, &f)
	return f, ok
}
