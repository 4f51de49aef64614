package tools

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
)

const (
	httpFetchName = "HttpFetch"
	httpPostName  = "HttpPost"
)

// HTTPLimits bounds what one HTTP call may cost. A zero field takes its
// default: 8 MiB request and response bodies, 64 response header names,
// 5 redirects, 10 s to dial, 10 s for TLS, 30 s for the response headers
// and 60 s for the whole call.
type HTTPLimits struct {
	// MaxRequestBody caps HttpPost's body; a longer one is invalid params.
	// (The broker's 1 MiB request frame is the tighter cap today.)
	MaxRequestBody int64
	// MaxResponseBody caps the body returned; the rest is not read and
	// the result says truncated. Base64 of 8 MiB fits the 16 MiB
	// response cap, as with Read.
	MaxResponseBody int64
	// MaxResponseHeaders caps the header names returned.
	MaxResponseHeaders int
	// MaxRedirects caps the redirect hops followed.
	MaxRedirects int
	// DialTimeout bounds connecting (all addresses of a name together),
	// TLSHandshakeTimeout the handshake, ResponseHeaderTimeout the wait
	// for the status line after the request is sent, and CallTimeout the
	// whole call, redirects and body included.
	DialTimeout           time.Duration
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration
	CallTimeout           time.Duration
}

// defaultHTTPLimits are the limits of a tool built without WithHTTPLimits.
var defaultHTTPLimits = HTTPLimits{
	MaxRequestBody:        8 << 20,
	MaxResponseBody:       8 << 20,
	MaxResponseHeaders:    64,
	MaxRedirects:          5,
	DialTimeout:           10 * time.Second,
	TLSHandshakeTimeout:   10 * time.Second,
	ResponseHeaderTimeout: 30 * time.Second,
	CallTimeout:           60 * time.Second,
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	d := defaultHTTPLimits
	l.MaxRequestBody = orDefault(l.MaxRequestBody, d.MaxRequestBody)
	l.MaxResponseBody = orDefault(l.MaxResponseBody, d.MaxResponseBody)
	l.MaxResponseHeaders = orDefault(l.MaxResponseHeaders, d.MaxResponseHeaders)
	l.MaxRedirects = orDefault(l.MaxRedirects, d.MaxRedirects)
	l.DialTimeout = orDefault(l.DialTimeout, d.DialTimeout)
	l.TLSHandshakeTimeout = orDefault(l.TLSHandshakeTimeout, d.TLSHandshakeTimeout)
	l.ResponseHeaderTimeout = orDefault(l.ResponseHeaderTimeout, d.ResponseHeaderTimeout)
	l.CallTimeout = orDefault(l.CallTimeout, d.CallTimeout)
	return l
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// maxURLLength bounds the URL a skill may ask for; servers refuse longer
// ones anyway.
const maxURLLength = 8 << 10

type httpConfig struct {
	limits    HTTPLimits
	resolve   resolveFunc
	tlsConfig *tls.Config
}

// HTTPOption configures an HTTP tool.
type HTTPOption func(*httpConfig)

// WithHTTPLimits sets the tool's limits; zero fields keep their defaults.
func WithHTTPLimits(l HTTPLimits) HTTPOption {
	return func(c *httpConfig) { c.limits = l.withDefaults() }
}

// withResolver replaces the system resolver. Tests only, which is why it
// is unexported: it lets a name resolve to loopback without /etc/hosts.
func withResolver(r resolveFunc) HTTPOption {
	return func(c *httpConfig) { c.resolve = r }
}

// withTLSConfig replaces the client TLS configuration (tests trust a
// test server's certificate with it).
func withTLSConfig(t *tls.Config) HTTPOption {
	return func(c *httpConfig) { c.tlsConfig = t }
}

// HTTPTool is the native HttpFetch (GET) or HttpPost tool (DESIGN §6).
//
// Prepare checks the URL against x-allowed-domains and the headers, and
// binds the tool to that policy: one instance serves one invocation, and
// its redirect and dial checks need the policy at Invoke time, which the
// broker hands only to Prepare. Invoke then sends the request through a
// client of its own: no proxy from the environment, no cookie jar, every
// redirect hop re-checked, and every address dialled checked at dial time.
type HTTPTool struct {
	name   string
	method string
	cfg    httpConfig
	client *http.Client
	enf    atomic.Pointer[enforce.Enforcer]
}

// NewHTTPFetch is the HttpFetch tool.
func NewHTTPFetch(opts ...HTTPOption) *HTTPTool {
	return newHTTPTool(httpFetchName, http.MethodGet, opts)
}

// NewHTTPPost is the HttpPost tool.
func NewHTTPPost(opts ...HTTPOption) *HTTPTool {
	return newHTTPTool(httpPostName, http.MethodPost, opts)
}

func newHTTPTool(name, method string, opts []HTTPOption) *HTTPTool {
	h := &HTTPTool{name: name, method: method,
		cfg: httpConfig{limits: defaultHTTPLimits, resolve: systemResolve}}
	for _, o := range opts {
		o(&h.cfg)
	}
	h.client = h.newClient()
	return h
}

var httpSpecs = sync.OnceValue(func() map[string]Spec {
	m := map[string]Spec{}
	for _, s := range NativeSpecs() {
		if s.Name == httpFetchName || s.Name == httpPostName {
			m[s.Name] = s
		}
	}
	return m
})

// Spec is the tool's entry of NativeSpecs, so the schema lives in one place.
func (h *HTTPTool) Spec() Spec { return httpSpecs()[h.name] }

// HTTPResult is the result of HttpFetch and HttpPost. Any status the
// server sends, 404 or 500 included, is a result, not an error.
type HTTPResult struct {
	Status int `json:"status"`
	// Headers are the response headers, canonical names, sorted, at most
	// MaxResponseHeaders of them (HeadersTruncated says some were left).
	Headers map[string][]string `json:"headers"`
	// Body is the text itself when valid UTF-8, else base64 (Encoding).
	Body     string `json:"body"`
	Encoding string `json:"encoding,omitempty"`
	// Truncated says the body stops at MaxResponseBody, or was cut
	// further to fit the response cap.
	Truncated        bool `json:"truncated,omitempty"`
	HeadersTruncated bool `json:"headers_truncated,omitempty"`
}

type httpArgs struct {
	URL     string            `json:"url"`
	Body    *string           `json:"body,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Prepare checks args before dispatch and returns them with the URL in
// its normalised, checked form. A URL outside x-allowed-domains is the
// enforcer's domain_violation denial; bad headers, a missing or oversized
// body wrap jsonrpc.ErrInvalidParams.
func (h *HTTPTool) Prepare(args json.RawMessage, e *enforce.Enforcer) (json.RawMessage, error) {
	if err := h.bind(e); err != nil {
		return nil, err
	}
	a, _, err := h.decode(args)
	if err != nil {
		return nil, err
	}
	u, err := e.CheckURL(h.name, a.URL)
	if err != nil {
		return nil, err
	}
	a.URL = u.String()
	return json.Marshal(a)
}

// bind ties the tool to the first policy it is prepared with.
func (h *HTTPTool) bind(e *enforce.Enforcer) error {
	if e == nil {
		return fmt.Errorf("%s: %w", h.name, ErrHTTPUnbound)
	}
	if h.enf.CompareAndSwap(nil, e) || h.enf.Load() == e {
		return nil
	}
	return fmt.Errorf("%s: %w", h.name, ErrHTTPRebind)
}

func (h *HTTPTool) decode(args json.RawMessage) (httpArgs, http.Header, error) {
	var a httpArgs
	if err := jsonrpc.DecodeParams(args, &a); err != nil {
		return a, nil, err
	}
	switch {
	case a.URL == "":
		return a, nil, &jsonrpc.ParamsError{Field: "url", Detail: "required"}
	case len(a.URL) > maxURLLength:
		return a, nil, &jsonrpc.ParamsError{Field: "url", Detail: fmt.Sprintf("longer than %d bytes", maxURLLength)}
	case h.method == http.MethodGet && a.Body != nil:
		return a, nil, &jsonrpc.ParamsError{Field: "body", Detail: "unknown field"}
	case h.method == http.MethodPost && a.Body == nil:
		return a, nil, &jsonrpc.ParamsError{Field: "body", Detail: "required"}
	case a.Body != nil && int64(len(*a.Body)) > h.cfg.limits.MaxRequestBody:
		return a, nil, &jsonrpc.ParamsError{Field: "body", Detail: fmt.Sprintf("longer than %d bytes", h.cfg.limits.MaxRequestBody)}
	}
	hdr, err := checkRequestHeaders(a.Headers)
	return a, hdr, err
}

// Invoke sends the request. A redirect or an address the policy refuses
// is a domain_violation denial; a network failure is a *Failure whose
// reason is one of the HTTPReason words (httpFailure).
func (h *HTTPTool) Invoke(ctx context.Context, call Call) (any, error) {
	e := h.enf.Load()
	if e == nil {
		return nil, fmt.Errorf("%s: %w", h.name, ErrHTTPUnbound)
	}
	a, hdr, err := h.decode(call.Args)
	if err != nil {
		return nil, err
	}
	// Checked again: Invoke must be safe even with args Prepare never saw.
	u, err := e.CheckURL(h.name, a.URL)
	if err != nil {
		return nil, err
	}
	if err := checkTraceParent(call.TraceParent); err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.limits.CallTimeout)
	defer cancel()
	req, err := h.newRequest(ctx, u, a.Body, hdr, call.TraceParent)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, h.failure(e, err)
	}
	defer resp.Body.Close()
	body, truncated, err := readCapped(resp.Body, resp.ContentLength, h.cfg.limits.MaxResponseBody)
	if err != nil {
		return nil, h.failure(e, err)
	}
	res := &HTTPResult{Status: resp.StatusCode, Truncated: truncated}
	res.Headers, res.HeadersTruncated = responseHeaders(resp.Header, h.cfg.limits.MaxResponseHeaders)
	if utf8.Valid(body) {
		res.Body = string(body)
	} else {
		res.Body, res.Encoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return res, nil
}

func (h *HTTPTool) newRequest(ctx context.Context, u *url.URL, body *string, hdr http.Header, traceparent string) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		// A strings.Reader gives the request GetBody, so a same-origin
		// 307/308 can send the body again.
		r = strings.NewReader(*body)
	}
	req, err := http.NewRequestWithContext(ctx, h.method, u.String(), r)
	if err != nil {
		return nil, fmt.Errorf("%s: new request: %w", h.name, err)
	}
	req.URL, req.Host = u, u.Host // exactly what was checked
	req.Header = hdr
	h.ownHeaders(req.Header, traceparent)
	return req, nil
}

// ownHeaders sets the headers the tool owns on every request and hop.
func (h *HTTPTool) ownHeaders(hdr http.Header, traceparent string) {
	if traceparent != "" {
		hdr.Set("Traceparent", traceparent)
	}
	if hdr.Get("User-Agent") == "" {
		hdr.Set("User-Agent", "skillrun-"+h.name)
	}
}

// failure turns a client error into what the broker gets: the denial a
// redirect or dial check made, or a network *Failure.
func (h *HTTPTool) failure(e *enforce.Enforcer, err error) error {
	if d, ok := enforce.AsDenial(err); ok {
		if d.Tool == "" {
			d.Tool = h.name
		}
		if d.SkillID == "" {
			d.SkillID = e.SkillID()
		}
		return d
	}
	return httpFailure(h.name, err)
}

// readCapped reads up to max bytes and reports whether more followed.
func readCapped(r io.Reader, length, max int64) ([]byte, bool, error) {
	var buf bytes.Buffer
	if length > 0 {
		// A hint only: the server may send more or less than it said.
		buf.Grow(int(min(length, max)))
	}
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, fmt.Errorf("read body: %w", err)
	}
	if n > max {
		return buf.Bytes()[:max], true, nil
	}
	return buf.Bytes(), false, nil
}

// checkTraceParent accepts a W3C traceparent (version-traceid-parentid-
// flags, lowercase hex) or "". The broker makes it; a bad one is a bug
// there, refused rather than sent.
func checkTraceParent(tp string) error {
	if tp == "" {
		return nil
	}
	const n = 55 // 2+1+32+1+16+1+2
	ok := len(tp) >= n && tp[2] == '-' && tp[35] == '-' && tp[52] == '-' &&
		isLowerHex(tp[:2]) && isLowerHex(tp[3:35]) && isLowerHex(tp[36:52]) && isLowerHex(tp[53:55]) &&
		tp[:2] != "ff" && tp[3:35] != strings.Repeat("0", 32) && tp[36:52] != strings.Repeat("0", 16) &&
		(len(tp) == n || tp[:2] != "00" && tp[n] == '-')
	if !ok {
		return fmt.Errorf("traceparent %q: %w", truncateForDetail(tp), ErrBadTraceParent)
	}
	return nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Truncate implements jsonrpc.Truncatable: escaped text can grow six
// times in JSON, so a body under MaxResponseBody may still not fit the
// response cap. The body is cut to fit max bytes.
func (r *HTTPResult) Truncate(max int) any {
	out := *r
	out.Truncated = true
	out.Body = ""
	overhead, _ := json.Marshal(&out)
	room := max - len(overhead)
	if room <= 0 {
		return &out
	}
	if r.Encoding == "base64" {
		out.Body = r.Body[:min(len(r.Body), room/4*4)] // whole quanta
		return &out
	}
	out.Body = r.Body[:escapedPrefix(r.Body, room)]
	return &out
}
