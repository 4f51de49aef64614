package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/skill"
)

const testTraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// httpPolicy compiles a skill allowed HttpFetch and HttpPost on domains.
func httpPolicy(t testing.TB, domains ...string) *enforce.Enforcer {
	t.Helper()
	doms, _ := json.Marshal(domains)
	m, diags := skill.Parse("SKILL.md", []byte("---\nname: t\ndescription: d\nallowed-tools: HttpFetch HttpPost\nx-allowed-domains: "+string(doms)+"\n---\n"))
	for _, d := range diags {
		if d.Severity == skill.SeverityError {
			t.Fatalf("SKILL.md: %s", d)
		}
	}
	reg, err := NewRegistry(NewHTTPFetch(), NewHTTPPost())
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := enforce.Compile(skill.NewSnapshot(m, t.TempDir(), "SKILL.md", "hash", nil), reg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// server is a loopback test server that counts and records requests.
type server struct {
	*httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

func newServer(t testing.TB, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, recorded{r.Method, r.URL.Path, r.Header.Clone(), body})
		s.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

// port is the server's port, for URLs that name it by another host.
func (s *server) port() string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

func text(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) }
}

func redirectTo(status int, loc string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, loc, status) }
}

// staticResolver resolves names from a table and nothing else.
func staticResolver(table map[string][]string) resolveFunc {
	return func(_ context.Context, host string) ([]net.IPAddr, error) {
		addrs, ok := table[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []net.IPAddr
		for _, a := range addrs {
			out = append(out, net.IPAddr{IP: net.ParseIP(a)})
		}
		return out, nil
	}
}

// callHTTP runs a call the way the broker does: Prepare, then Invoke.
func callHTTP(t testing.TB, h *HTTPTool, e *enforce.Enforcer, args string) (*HTTPResult, error) {
	t.Helper()
	return callHTTPCtx(t.Context(), h, e, args)
}

func callHTTPCtx(ctx context.Context, h *HTTPTool, e *enforce.Enforcer, args string) (*HTTPResult, error) {
	checked, err := h.Prepare(json.RawMessage(args), e)
	if err != nil {
		return nil, err
	}
	res, err := h.Invoke(ctx, Call{Args: checked, TraceParent: testTraceParent})
	if err != nil {
		return nil, err
	}
	return res.(*HTTPResult), nil
}

func urlArgs(u string) string { return jsonArgs(map[string]any{"url": u}) }

func postArgs(u, body string) string { return jsonArgs(map[string]any{"url": u, "body": body}) }

func jsonArgs(v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wantDenial fails unless err is a domain_violation denial for tool.
func wantDenial(t *testing.T, err error, tool, detail string) {
	t.Helper()
	d, ok := enforce.AsDenial(err)
	if !ok || !errors.Is(err, enforce.ErrDomainViolation) {
		t.Fatalf("err = %v, want a domain_violation denial", err)
	}
	if d.Reason != enforce.ReasonDomainViolation || d.Tool != tool || d.SkillID != "t" {
		t.Fatalf("denial = %+v, want domain_violation by %s for skill t", d, tool)
	}
	if !strings.Contains(d.Detail, detail) {
		t.Fatalf("denial detail %q does not mention %q", d.Detail, detail)
	}
}

// wantFailure fails unless err is a network *Failure with reason.
func wantFailure(t *testing.T, err error, reason string) {
	t.Helper()
	f, ok := AsFailure(err)
	if !ok || !errors.Is(err, ErrNetwork) {
		t.Fatalf("err = %v, want a network *Failure", err)
	}
	if f.Reason != reason {
		t.Fatalf("reason = %q (%v), want %q", f.Reason, f.Err, reason)
	}
	if _, denied := enforce.AsDenial(err); denied {
		t.Fatalf("a network failure must not be a denial: %v", err)
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a network failure must not pass for a file error: %v", err)
	}
}

// Seed criterion 7: an allowed domain is fetched; any other host is denied
// before a connection is made.
func TestHTTPFetchDomains(t *testing.T) {
	srv := newServer(t, text("hello"))
	e := httpPolicy(t, "127.0.0.1")
	tests := []struct {
		name   string
		url    string
		denied string // a word of the denial's detail, "" for success
	}{
		{"declared host", srv.URL + "/a?b=c", ""},
		{"declared host, trailing dot", "http://127.0.0.1.:" + srv.port() + "/", ""},
		{"another host", "http://example.org:" + srv.port() + "/", "example.org"},
		{"localhost is another name", "http://localhost:" + srv.port() + "/", "localhost"},
		{"another loopback address", "http://127.0.0.2:" + srv.port() + "/", "127.0.0.2"},
		{"hex shorthand of loopback", "http://0x7f.1:" + srv.port() + "/", "dotted-quad"},
		{"decimal loopback", "http://2130706433:" + srv.port() + "/", "dotted-quad"},
		{"short loopback", "http://127.1:" + srv.port() + "/", "dotted-quad"},
		{"IPv6 loopback", "http://[::1]:" + srv.port() + "/", "::1"},
		{"userinfo", "http://evil.com@127.0.0.1:" + srv.port() + "/", "userinfo"},
		{"file scheme", "file:///etc/passwd", "scheme"},
		{"ftp scheme", "ftp://127.0.0.1:" + srv.port() + "/", "scheme"},
		{"no scheme", "//127.0.0.1:" + srv.port() + "/", "scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.hits.Load()
			res, err := callHTTP(t, NewHTTPFetch(), e, urlArgs(tt.url))
			if tt.denied != "" {
				wantDenial(t, err, "HttpFetch", tt.denied)
				if n := srv.hits.Load() - before; n != 0 {
					t.Fatalf("server got %d requests, want 0", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != 200 || res.Body != "hello" || res.Truncated || res.Encoding != "" {
				t.Fatalf("result = %+v", res)
			}
			if ct := res.Headers["Content-Type"]; len(ct) != 1 || !strings.HasPrefix(ct[0], "text/plain") {
				t.Fatalf("headers = %v", res.Headers)
			}
		})
	}
}

// Even a "*" declaration never reaches an IP address: those must be
// declared literally.
func TestHTTPWildcardNeverMatchesIP(t *testing.T) {
	srv := newServer(t, text("x"))
	_, err := callHTTP(t, NewHTTPFetch(), httpPolicy(t, "*"), urlArgs(srv.URL))
	wantDenial(t, err, "HttpFetch", "127.0.0.1")
	if srv.hits.Load() != 0 {
		t.Fatal("server was reached")
	}
}

// Seed criterion 18: the call's traceparent reaches the server on the
// first request and on every redirect hop, same origin or not.
func TestHTTPTraceParent(t *testing.T) {
	other := newServer(t, text("end"))
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a":
			http.Redirect(w, r, "/b", http.StatusFound)
		case "/b":
			http.Redirect(w, r, other.URL+"/c", http.StatusTemporaryRedirect)
		}
	})
	e := httpPolicy(t, "127.0.0.1")
	for _, h := range []*HTTPTool{NewHTTPFetch(), NewHTTPPost()} {
		t.Run(h.name, func(t *testing.T) {
			args := urlArgs(srv.URL + "/a")
			if h.method == http.MethodPost {
				args = postArgs(srv.URL+"/a", "")
			}
			res, err := callHTTP(t, h, e, args)
			if err != nil {
				t.Fatal(err)
			}
			if res.Body != "end" {
				t.Fatalf("result = %+v", res)
			}
		})
	}
	reqs := append(srv.requests(), other.requests()...)
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Values("Traceparent"); len(got) != 1 || got[0] != testTraceParent {
			t.Errorf("%s %s: traceparent = %q, want exactly %q", r.Method, r.Path, got, testTraceParent)
		}
		if got := r.Header.Values("Tracestate"); len(got) != 0 {
			t.Errorf("%s %s: tracestate = %q, want none", r.Method, r.Path, got)
		}
	}
}

func TestHTTPTraceParentChecked(t *testing.T) {
	srv := newServer(t, text("x"))
	h, e := NewHTTPFetch(), httpPolicy(t, "127.0.0.1")
	checked, err := h.Prepare(json.RawMessage(urlArgs(srv.URL)), e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Invoke(t.Context(), Call{Args: checked, TraceParent: "00-bad\r\nX-Evil: 1"}); !errors.Is(err, ErrBadTraceParent) {
		t.Fatalf("err = %v, want ErrBadTraceParent", err)
	}
	if srv.hits.Load() != 0 {
		t.Fatal("server was reached")
	}
	// No traceparent (a caller outside the broker): none is sent.
	if _, err := h.Invoke(t.Context(), Call{Args: checked}); err != nil {
		t.Fatal(err)
	}
	if got := srv.requests()[0].Header.Values("Traceparent"); len(got) != 0 {
		t.Fatalf("traceparent = %q, want none", got)
	}
}

func TestHTTPPost(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	e := httpPolicy(t, "127.0.0.1")
	bodies := map[string]string{
		"empty":   "",
		"text":    "hello, wörld\r\n{\"json\": true}",
		"large":   strings.Repeat("0123456789abcdef", 1<<16),
		"control": "\x00\x01\x7f",
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			args := jsonArgs(map[string]any{"url": srv.URL + "/p", "body": body,
				"headers": map[string]string{"Content-Type": "application/json"}})
			res, err := callHTTP(t, NewHTTPPost(), e, args)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != http.StatusCreated {
				t.Fatalf("status = %d", res.Status)
			}
			reqs := srv.requests()
			got := reqs[len(reqs)-1]
			if got.Method != http.MethodPost || got.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("request = %s %v", got.Method, got.Header)
			}
			if hashOf(got.Body) != hashOf([]byte(body)) || len(got.Body) != len(body) {
				t.Fatalf("body of %d bytes arrived as %d bytes, hash %s", len(body), len(got.Body), hashOf(got.Body))
			}
			if cl := got.Header.Get("Content-Length"); len(body) > 0 && cl != fmt.Sprint(len(body)) {
				t.Fatalf("Content-Length = %q, want %d", cl, len(body))
			}
		})
	}
}

func TestHTTPResponse(t *testing.T) {
	binary := []byte{0xff, 0xfe, 0x00, 'a'}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			io.WriteString(w, strings.Repeat("a", 100))
		case "/exact":
			io.WriteString(w, strings.Repeat("a", 64))
		case "/bin":
			w.Write(binary)
		case "/headers":
			for i := range 70 {
				w.Header().Set(fmt.Sprintf("X-H%02d", i), "v")
			}
		case "/404":
			http.NotFound(w, r)
		case "/chunked":
			for range 10 {
				io.WriteString(w, strings.Repeat("b", 10))
				w.(http.Flusher).Flush()
			}
		}
	})
	e := httpPolicy(t, "127.0.0.1")
	h := NewHTTPFetch(WithHTTPLimits(HTTPLimits{MaxResponseBody: 64}))
	tests := []struct {
		path      string
		status    int
		body      string
		encoding  string
		truncated bool
		hdrsCut   bool
	}{
		{"/big", 200, strings.Repeat("a", 64), "", true, false},
		{"/exact", 200, strings.Repeat("a", 64), "", false, false},
		{"/chunked", 200, strings.Repeat("b", 64), "", true, false},
		{"/bin", 200, base64.StdEncoding.EncodeToString(binary), "base64", false, false},
		{"/headers", 200, "", "", false, true},
		{"/404", 404, "404 page not found\n", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res, err := callHTTP(t, h, e, urlArgs(srv.URL+tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.status || res.Body != tt.body || res.Encoding != tt.encoding ||
				res.Truncated != tt.truncated || res.HeadersTruncated != tt.hdrsCut {
				t.Fatalf("result = %+v", res)
			}
			if len(res.Headers) > defaultHTTPLimits.MaxResponseHeaders {
				t.Fatalf("%d headers returned", len(res.Headers))
			}
		})
	}
}

func TestHTTPResultTruncate(t *testing.T) {
	for _, r := range []*HTTPResult{
		{Status: 200, Body: strings.Repeat("<\"", 1000)},
		{Status: 200, Body: base64.StdEncoding.EncodeToString(make([]byte, 3000)), Encoding: "base64"},
	} {
		for _, budget := range []int{0, 50, 100, 1000, 5000} {
			out := r.Truncate(budget).(*HTTPResult)
			raw, _ := json.Marshal(out)
			if !out.Truncated || (len(out.Body) > 0 && len(raw) > budget) || !strings.HasPrefix(r.Body, out.Body) {
				t.Errorf("Truncate(%d) = %d bytes, body %d, truncated %v", budget, len(raw), len(out.Body), out.Truncated)
			}
			if out.Encoding == "base64" && len(out.Body)%4 != 0 {
				t.Errorf("Truncate(%d) cut a base64 quantum", budget)
			}
		}
	}
}

func TestHTTPTimeouts(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			io.WriteString(w, "start")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	e := httpPolicy(t, "127.0.0.1")
	short := 200 * time.Millisecond
	tests := []struct {
		name   string
		limits HTTPLimits
		path   string
	}{
		{"no response headers", HTTPLimits{ResponseHeaderTimeout: short}, "/slow-headers"},
		{"whole call", HTTPLimits{CallTimeout: short}, "/slow-headers"},
		{"slow body", HTTPLimits{CallTimeout: short}, "/slow-body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := callHTTP(t, NewHTTPFetch(WithHTTPLimits(tt.limits)), e, urlArgs(srv.URL+tt.path))
			wantFailure(t, err, HTTPReasonTimeout)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("a timeout must match context.DeadlineExceeded (the broker's outcome timeout)")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
	t.Run("caller cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(short, cancel)
		_, err := callHTTPCtx(ctx, NewHTTPFetch(), e, urlArgs(srv.URL+"/slow-headers"))
		wantFailure(t, err, HTTPReasonCanceled)
	})
}

func TestHTTPNetworkErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "secure") }))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	e := httpPolicy(t, "127.0.0.1", "nowhere.example.test")
	resolver := withResolver(staticResolver(nil))

	_, err = callHTTP(t, NewHTTPFetch(), e, urlArgs("http://"+closed+"/"))
	wantFailure(t, err, HTTPReasonConnRefused)
	if !errors.Is(err, ErrConnRefused) {
		t.Fatal("want ErrConnRefused")
	}
	_, err = callHTTP(t, NewHTTPFetch(), e, urlArgs(tlsSrv.URL))
	wantFailure(t, err, HTTPReasonTLS)
	_, err = callHTTP(t, NewHTTPFetch(resolver), e, urlArgs("http://nowhere.example.test/"))
	wantFailure(t, err, HTTPReasonHostNotFound)

	// The same server works once its certificate is trusted.
	trusted := withTLSConfig(tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig)
	res, err := callHTTP(t, NewHTTPFetch(trusted), e, urlArgs(tlsSrv.URL))
	if err != nil || res.Body != "secure" {
		t.Fatalf("https: %+v, %v", res, err)
	}
}

func TestHTTPBinding(t *testing.T) {
	srv := newServer(t, text("x"))
	h := NewHTTPFetch()
	if _, err := h.Invoke(t.Context(), Call{Args: json.RawMessage(urlArgs(srv.URL))}); !errors.Is(err, ErrHTTPUnbound) {
		t.Fatalf("Invoke before Prepare: %v, want ErrHTTPUnbound", err)
	}
	e1, e2 := httpPolicy(t, "127.0.0.1"), httpPolicy(t, "127.0.0.1")
	if _, err := h.Prepare(json.RawMessage(urlArgs(srv.URL)), e1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Prepare(json.RawMessage(urlArgs(srv.URL)), e2); !errors.Is(err, ErrHTTPRebind) {
		t.Fatalf("second policy: %v, want ErrHTTPRebind", err)
	}
	if srv.hits.Load() != 0 {
		t.Fatal("server was reached")
	}
}

// The production tool resolves with the system resolver, and takes
// nothing from the environment: no proxy, no cookie jar.
func TestHTTPClientDefaults(t *testing.T) {
	h := NewHTTPFetch()
	if reflect.ValueOf(h.cfg.resolve).Pointer() != reflect.ValueOf(systemResolve).Pointer() {
		t.Fatal("NewHTTPFetch does not use the system resolver")
	}
	if h.client == http.DefaultClient || h.client.Jar != nil || h.client.Transport.(*http.Transport).Proxy != nil {
		t.Fatal("client must be the tool's own, without jar or proxy")
	}

	proxy := newServer(t, text("proxied"))
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "s", Value: "1"})
			http.Redirect(w, r, "/get", http.StatusFound)
		}
	})
	e := httpPolicy(t, "127.0.0.1")
	h = NewHTTPFetch()
	for range 2 {
		if _, err := callHTTP(t, h, e, urlArgs(srv.URL+"/set")); err != nil {
			t.Fatal(err)
		}
	}
	if proxy.hits.Load() != 0 {
		t.Fatal("the environment's proxy was used")
	}
	for _, r := range srv.requests() {
		if c := r.Header.Get("Cookie"); c != "" {
			t.Fatalf("%s sent cookie %q", r.Path, c)
		}
	}
}

func BenchmarkHttpFetch(b *testing.B) {
	srv := newServer(b, text(strings.Repeat("x", 1024)))
	e := httpPolicy(b, "127.0.0.1")
	h := NewHTTPFetch()
	args := json.RawMessage(urlArgs(srv.URL + "/bench"))
	b.ReportAllocs()
	for b.Loop() {
		checked, err := h.Prepare(args, e)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.Invoke(b.Context(), Call{Args: checked, TraceParent: testTraceParent}); err != nil {
			b.Fatal(err)
		}
	}
}
