package tools

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// The HTTP tools' sentinels. They live here rather than in a tools/errors.go
// only because this change may not add one; move them when it exists.
var (
	// ErrNetwork matches every HTTP failure that is not a denial: the
	// call was allowed and the network failed it.
	ErrNetwork = errors.New("network failure")
	// ErrConnRefused means nothing listened at the address dialled.
	ErrConnRefused = errors.New("connection refused")
	// ErrHostNotFound means the name did not resolve.
	ErrHostNotFound = errors.New("host not found")
	// ErrTLS means the TLS handshake failed: an untrusted certificate, a
	// name mismatch, no common protocol version.
	ErrTLS = errors.New("tls handshake failed")
	// ErrTooManyRedirects means the chain went past MaxRedirects hops.
	ErrTooManyRedirects = errors.New("too many redirects")

	// ErrHTTPUnbound means an HTTP tool was invoked before any Prepare
	// bound it to an invocation's policy; nothing is sent.
	ErrHTTPUnbound = errors.New("http tool not bound to a policy")
	// ErrHTTPRebind means one HTTP tool instance was handed a second
	// policy. A tool serves one invocation: its redirect and dial checks
	// use the policy its first Prepare saw.
	ErrHTTPRebind = errors.New("http tool already bound to another policy")
	// ErrBadTraceParent means the broker handed over a malformed W3C
	// traceparent; it is not sent.
	ErrBadTraceParent = errors.New("malformed traceparent")
	// ErrUncheckedAddr means a socket address reached the dialer's last
	// check without having been checked first: a bug, refused.
	ErrUncheckedAddr = errors.New("address not checked before dialling")
)

// The reasons of the HTTP tools' *Failure, fixed words a skill may be told.
const (
	HTTPReasonTimeout          = "timeout"
	HTTPReasonCanceled         = "canceled"
	HTTPReasonConnRefused      = "connection_refused"
	HTTPReasonHostNotFound     = "host_not_found"
	HTTPReasonTLS              = "tls_error"
	HTTPReasonTooManyRedirects = "too_many_redirects"
	HTTPReasonNetwork          = "network_error"
)

// httpReasons is the one place the reasons and the errors they match meet.
var httpReasons = []struct {
	reason string
	err    error
}{
	{HTTPReasonTimeout, context.DeadlineExceeded},
	{HTTPReasonCanceled, context.Canceled},
	{HTTPReasonConnRefused, ErrConnRefused},
	{HTTPReasonHostNotFound, ErrHostNotFound},
	{HTTPReasonTLS, ErrTLS},
	{HTTPReasonTooManyRedirects, ErrTooManyRedirects},
	{HTTPReasonNetwork, nil},
}

// httpFailure classifies an error of http.Client.Do or of reading the
// body (the caller has taken denials out) as a *Failure: the broker sends
// its reason to the skill as a tool_error. The error matches ErrNetwork
// and the reason's sentinel; a timeout matches context.DeadlineExceeded,
// so the broker records the outcome "timeout".
//
// The cause is kept as text, not wrapped: a connect errno such as EACCES
// matches fs.ErrPermission, and must not pass for a file error.
func httpFailure(tool string, err error) error {
	reason := failureReason(err)
	for _, r := range httpReasons {
		if r.reason == reason && r.err != nil {
			return Fail(reason, fmt.Errorf("%s: %w: %w: %v", tool, ErrNetwork, r.err, err))
		}
	}
	return Fail(reason, fmt.Errorf("%s: %w: %v", tool, ErrNetwork, err))
}

func failureReason(err error) string {
	var (
		ne       net.Error
		dnsErr   *net.DNSError
		certErr  *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invalid  x509.CertificateInvalidError
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
	)
	switch {
	case errors.Is(err, ErrTooManyRedirects):
		return HTTPReasonTooManyRedirects
	case errors.Is(err, context.Canceled):
		return HTTPReasonCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return HTTPReasonTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return HTTPReasonConnRefused
	case errors.As(err, &dnsErr):
		return HTTPReasonHostNotFound
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr),
		errors.As(err, &invalid), errors.As(err, &recErr), errors.As(err, &alertErr):
		return HTTPReasonTLS
	}
	return HTTPReasonNetwork
}
