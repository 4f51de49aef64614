package main

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes of DESIGN §3 that commands other than the skill's own use.
const (
	exitOK      = 0
	exitFailure = 1   // a command's own negative answer (validate: a skill is invalid)
	exitUsage   = 2   // bad flags or arguments
	exitSetup   = 125 // skillrun could not set up
)

// exitError carries a chosen exit code. silent means the command already
// told the user everything; no extra line is printed.
type exitError struct {
	code   int
	err    error
	silent bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// errUsage marks a usage error (cobra's flag errors are wrapped into it).
var errUsage = errors.New("usage")

// exitCode is the one place errors become exit codes and the one line a
// failing command prints: no stack traces for user error.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	code := exitFailure
	if errors.As(err, &ee) {
		code = ee.code
		if ee.silent {
			return code
		}
	} else if errors.Is(err, errUsage) {
		code = exitUsage
	}
	fmt.Fprintf(stderr, "skillrun: %v\n", err)
	return code
}
