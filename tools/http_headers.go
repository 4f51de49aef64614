package tools

import (
	"fmt"
	"net/http"
	"net/textproto"
	"sort"
	"strings"

	"github.com/skillrun/skillrun/jsonrpc"
)

// Request header caps: generous for API keys and content types, small
// enough that a skill cannot make the broker build huge requests.
const (
	maxRequestHeaders     = 32
	maxRequestHeaderValue = 8 << 10
	maxRequestHeaderBytes = 32 << 10
)

// ownedHeaders are the request headers a skill may not set, each with
// the reason. Hop-by-hop headers belong to the connection the transport
// manages; framing headers could smuggle a second request; the trace
// headers carry the broker's trace, not one the skill makes up.
var ownedHeaders = map[string]string{
	"Host":              "is the URL's host",
	"Content-Length":    "is set from the body",
	"Transfer-Encoding": "is set by the transport",
	"Te":                "is hop-by-hop",
	"Trailer":           "is set by the transport",
	"Connection":        "is hop-by-hop",
	"Keep-Alive":        "is hop-by-hop",
	"Upgrade":           "is hop-by-hop",
	"Expect":            "changes how the transport sends the body",
	"Traceparent":       "is set by the broker",
	"Tracestate":        "is set by the broker",
}

// checkRequestHeaders validates a skill's headers and returns them as an
// http.Header. Failures are *jsonrpc.ParamsError quoting only the skill's
// own input.
func checkRequestHeaders(in map[string]string) (http.Header, error) {
	if len(in) > maxRequestHeaders {
		return nil, &jsonrpc.ParamsError{Field: "headers", Detail: fmt.Sprintf("more than %d headers", maxRequestHeaders)}
	}
	names := make([]string, 0, len(in))
	for k := range in {
		names = append(names, k)
	}
	sort.Strings(names) // the same input always fails on the same header
	out := make(http.Header, len(in))
	total := 0
	for _, name := range names {
		value := in[name]
		if err := checkHeader(name, value); err != nil {
			return nil, err
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		if _, dup := out[key]; dup {
			return nil, headerError(name, "is given twice, in different case")
		}
		if total += len(name) + len(value); total > maxRequestHeaderBytes {
			return nil, &jsonrpc.ParamsError{Field: "headers", Detail: fmt.Sprintf("more than %d bytes in all", maxRequestHeaderBytes)}
		}
		out[key] = []string{value}
	}
	return out, nil
}

func checkHeader(name, value string) error {
	if !validHeaderName(name) {
		return headerError(name, "is not a valid header name")
	}
	key := textproto.CanonicalMIMEHeaderKey(name)
	if why, owned := ownedHeaders[key]; owned {
		return headerError(name, why)
	}
	if strings.HasPrefix(key, "Proxy-") {
		// There is no proxy; a Proxy-* header would only leak to the origin.
		return headerError(name, "is for a proxy")
	}
	if len(value) > maxRequestHeaderValue {
		return headerError(name, fmt.Sprintf("value is longer than %d bytes", maxRequestHeaderValue))
	}
	for i := 0; i < len(value); i++ {
		// CR or LF would end the header and start another (response
		// splitting); other controls are refused by most servers anyway.
		if c := value[i]; c < ' ' && c != '\t' || c == 0x7f {
			return headerError(name, "value contains a control character (CR, LF, NUL…)")
		}
	}
	return nil
}

func headerError(name, why string) error {
	return &jsonrpc.ParamsError{Field: "headers", Detail: fmt.Sprintf("%q %s", truncateForDetail(name), why)}
}

func truncateForDetail(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// responseHeaders copies at most max header names, in sorted order, and
// says whether any were left out.
func responseHeaders(h http.Header, max int) (map[string][]string, bool) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	cut := len(names) > max
	names = names[:min(len(names), max)]
	out := make(map[string][]string, len(names))
	for _, k := range names {
		out[k] = h[k]
	}
	return out, cut
}
