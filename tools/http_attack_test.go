package tools

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// Every redirect hop goes through the same URL check as the first
// request; a refused hop is a denial and the target gets nothing.
func TestHTTPRedirectChecks(t *testing.T) {
	forbidden := newServer(t, text("forbidden"))
	fp := forbidden.port()
	tests := []struct {
		name   string
		loc    string
		denied string
	}{
		{"to a host not declared", "http://localhost:" + fp + "/", "localhost"},
		{"to a name not declared", "http://evil.example:" + fp + "/", "evil.example"},
		{"to file", "file:///etc/passwd", "scheme"},
		{"to ftp", "ftp://127.0.0.1:" + fp + "/", "scheme"},
		{"to gopher", "gopher://127.0.0.1:" + fp + "/", "scheme"},
		{"to a hex address", "http://0x7f.1:" + fp + "/", "dotted-quad"},
		{"to a decimal address", "http://2130706433:" + fp + "/", "dotted-quad"},
		{"to IPv6 loopback", "http://[::1]:" + fp + "/", "::1"},
		{"to userinfo", "http://127.0.0.1:" + fp + "@evil.example/", "userinfo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, redirectTo(http.StatusFound, tt.loc))
			for _, h := range []*HTTPTool{NewHTTPFetch(), NewHTTPPost()} {
				args := urlArgs(srv.URL)
				if h.method == http.MethodPost {
					args = postArgs(srv.URL, "secret body")
				}
				_, err := callHTTP(t, h, httpPolicy(t, "127.0.0.1"), args)
				wantDenial(t, err, h.name, tt.denied)
			}
			if srv.hits.Load() != 2 {
				t.Fatalf("redirecting server got %d requests, want 2", srv.hits.Load())
			}
		})
	}
	if forbidden.hits.Load() != 0 {
		t.Fatalf("forbidden server got %d requests", forbidden.hits.Load())
	}
}

func TestHTTPRedirectLimit(t *testing.T) {
	// /n redirects to /n-1; /0 answers.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, "/%d", &n)
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/%d", n-1), http.StatusFound)
			return
		}
		fmt.Fprint(w, "done")
	})
	e := httpPolicy(t, "127.0.0.1")
	res, err := callHTTP(t, NewHTTPFetch(), e, urlArgs(srv.URL+"/5"))
	if err != nil || res.Body != "done" {
		t.Fatalf("5 hops: %+v, %v", res, err)
	}
	before := srv.hits.Load()
	_, err = callHTTP(t, NewHTTPFetch(), e, urlArgs(srv.URL+"/6"))
	wantFailure(t, err, HTTPReasonTooManyRedirects)
	if n := srv.hits.Load() - before; n != 6 {
		t.Fatalf("%d requests for 6 hops, want 6 (the 7th never sent)", n)
	}
}

// The skill's headers go to the origin it addressed and nowhere else;
// the traceparent goes everywhere.
func TestHTTPRedirectHeaders(t *testing.T) {
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/back" {
			// Back to the first origin, on a path the second one chose.
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		}
	})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/end", http.StatusFound)
		case "/cross":
			http.Redirect(w, r, other.URL+"/end", http.StatusFound)
		case "/round-trip":
			http.Redirect(w, r, other.URL+"/back?to="+srvURL(r)+"/end", http.StatusFound)
		}
	})
	e := httpPolicy(t, "127.0.0.1")
	args := func(path string) string {
		return fmt.Sprintf(`{"url":%q,"headers":{"Authorization":"Bearer k","X-Api-Key":"k2","Cookie":"c=1"}}`, srv.URL+path)
	}
	secret := []string{"Authorization", "X-Api-Key", "Cookie"}
	tests := []struct {
		path     string
		withKeys []string // "srv /path" or "other /path" of the requests that carry them
		without  []string
	}{
		{"/same", []string{"srv /same", "srv /end"}, nil},
		{"/cross", []string{"srv /cross"}, []string{"other /end"}},
		{"/round-trip", []string{"srv /round-trip"}, []string{"other /back", "srv /end"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			n, m := len(srv.requests()), len(other.requests())
			if _, err := callHTTP(t, NewHTTPFetch(), e, args(tt.path)); err != nil {
				t.Fatal(err)
			}
			seen := map[string]recorded{}
			for _, r := range srv.requests()[n:] {
				seen["srv "+r.Path] = r
			}
			for _, r := range other.requests()[m:] {
				seen["other "+r.Path] = r
			}
			if len(seen) != len(tt.withKeys)+len(tt.without) {
				t.Fatalf("requests %v", keys(seen))
			}
			for _, k := range tt.withKeys {
				for _, h := range secret {
					if seen[k].Header.Get(h) == "" {
						t.Errorf("%s lacks %s", k, h)
					}
				}
			}
			for _, k := range tt.without {
				for _, h := range append(secret, "Referer") {
					if v := seen[k].Header.Get(h); v != "" {
						t.Errorf("%s got %s: %q", k, h, v)
					}
				}
				if seen[k].Header.Get("Traceparent") != testTraceParent {
					t.Errorf("%s lacks the traceparent", k)
				}
			}
		})
	}
}

func TestCrossedOrigin(t *testing.T) {
	req := func(u string) *http.Request {
		r, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		chain []string // the requests made, then the next hop
		want  bool
	}{
		{[]string{"http://a.test/x", "http://a.test/y"}, false},
		{[]string{"https://a.test/x", "http://a.test/x"}, true},     // downgrade
		{[]string{"http://a.test/x", "http://a.test:8080/x"}, true}, // other port
		{[]string{"http://a.test/x", "http://b.a.test/x"}, true},    // subdomain
		{[]string{"http://a.test/x", "http://b.test/x", "http://a.test/z"}, true},
	}
	for _, tt := range tests {
		var via []*http.Request
		for _, u := range tt.chain[:len(tt.chain)-1] {
			via = append(via, req(u))
		}
		if got := crossedOrigin(via, req(tt.chain[len(tt.chain)-1])); got != tt.want {
			t.Errorf("crossedOrigin(%v) = %v, want %v", tt.chain, got, tt.want)
		}
	}
}

func srvURL(r *http.Request) string { return "http://" + r.Host }

func keys(m map[string]recorded) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A 307/308 keeps the method and body. Same origin, the body is sent
// again; to another origin, the redirect is handed back to the skill.
func TestHTTPRedirectPostBody(t *testing.T) {
	other := newServer(t, text("other"))
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/end", http.StatusTemporaryRedirect)
		case "/cross307":
			http.Redirect(w, r, other.URL+"/end", http.StatusTemporaryRedirect)
		case "/cross308":
			http.Redirect(w, r, other.URL+"/end", http.StatusPermanentRedirect)
		case "/cross303":
			http.Redirect(w, r, other.URL+"/end", http.StatusSeeOther)
		case "/end":
			fmt.Fprint(w, "end")
		}
	})
	e := httpPolicy(t, "127.0.0.1")
	const body = `{"secret":"s3"}`
	tests := []struct {
		path       string
		status     int
		otherHits  int64
		otherMeth  string
		sameBodies int
	}{
		{"/same", 200, 0, "", 2},
		{"/cross307", 307, 0, "", 1},
		{"/cross308", 308, 0, "", 1},
		{"/cross303", 200, 1, http.MethodGet, 1}, // 303 becomes a GET without the body
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			n, before := len(srv.requests()), other.hits.Load()
			res, err := callHTTP(t, NewHTTPPost(), e, postArgs(srv.URL+tt.path, body))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.status {
				t.Fatalf("status = %d, want %d", res.Status, tt.status)
			}
			if got := other.hits.Load() - before; got != tt.otherHits {
				t.Fatalf("other origin got %d requests, want %d", got, tt.otherHits)
			}
			if tt.otherHits > 0 {
				r := other.requests()[len(other.requests())-1]
				if r.Method != tt.otherMeth || len(r.Body) != 0 {
					t.Fatalf("other origin got %s with %d body bytes", r.Method, len(r.Body))
				}
			}
			for _, r := range srv.requests()[n:] {
				if string(r.Body) != body {
					t.Fatalf("%s got body %q", r.Path, r.Body)
				}
			}
			if got := len(srv.requests()) - n; got != tt.sameBodies {
				t.Fatalf("%d requests to the first origin, want %d", got, tt.sameBodies)
			}
		})
	}
}

// The address dialled is checked at dial time, whatever name led to it.
func TestHTTPDialChecks(t *testing.T) {
	srv := newServer(t, text("reached"))
	port := srv.port()
	v6 := listenV6(t)
	tests := []struct {
		name     string
		declared []string
		resolves map[string][]string
		url      string
		denied   string // the address named in the denial, "" for success
	}{
		{"literal name to loopback", []string{"api.example.test"},
			map[string][]string{"api.example.test": {"127.0.0.1"}}, "http://api.example.test:" + port + "/", "127.0.0.1"},
		{"literal name to metadata", []string{"api.example.test"},
			map[string][]string{"api.example.test": {"169.254.169.254"}}, "http://api.example.test:" + port + "/", "169.254.169.254"},
		{"literal name to mapped loopback", []string{"api.example.test"},
			map[string][]string{"api.example.test": {"::ffff:127.0.0.1"}}, "http://api.example.test:" + port + "/", "127.0.0.1"},
		{"literal name to private", []string{"api.example.test"},
			map[string][]string{"api.example.test": {"10.1.2.3"}}, "http://api.example.test:" + port + "/", "10.1.2.3"},
		{"one bad candidate of two", []string{"api.example.test"},
			map[string][]string{"api.example.test": {"93.184.216.34", "127.0.0.1"}}, "http://api.example.test:" + port + "/", "127.0.0.1"},
		{"wildcard to loopback", []string{"*.example.test"},
			map[string][]string{"api.example.test": {"127.0.0.1"}}, "http://api.example.test:" + port + "/", "127.0.0.1"},
		{"double wildcard to loopback", []string{"**"},
			map[string][]string{"api.example.test": {"127.0.0.1"}}, "http://api.example.test:" + port + "/", "127.0.0.1"},
		{"wildcard to IPv6 loopback", []string{"*.example.test"},
			map[string][]string{"api.example.test": {"::1"}}, "http://api.example.test:" + port + "/", "::1"},
		{"wildcard to NAT64 loopback", []string{"*.example.test"},
			map[string][]string{"api.example.test": {"64:ff9b::7f00:1"}}, "http://api.example.test:" + port + "/", "64:ff9b::7f00:1"},
		{"wildcard to unspecified", []string{"*.example.test"},
			map[string][]string{"api.example.test": {"0.0.0.0"}}, "http://api.example.test:" + port + "/", "0.0.0.0"},
		{"localhost declared, resolves to loopback", []string{"localhost"},
			map[string][]string{"localhost": {"127.0.0.1"}}, "http://localhost:" + port + "/", ""},
		{"localhost declared, resolves elsewhere", []string{"localhost"},
			map[string][]string{"localhost": {"10.0.0.1"}}, "http://localhost:" + port + "/", "10.0.0.1"},
		{"loopback IP declared", []string{"127.0.0.1"}, nil, "http://127.0.0.1:" + port + "/", ""},
		{"unspecified IP declared", []string{"0.0.0.0"}, nil, "http://0.0.0.0:" + port + "/", "0.0.0.0"},
		{"IPv6 loopback declared", []string{"::1"}, nil, v6, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.url == "" {
				t.Skip("no IPv6 loopback here")
			}
			before := srv.hits.Load()
			h := NewHTTPFetch(withResolver(staticResolver(tt.resolves)))
			res, err := callHTTP(t, h, httpPolicy(t, tt.declared...), urlArgs(tt.url))
			if tt.denied != "" {
				wantDenial(t, err, "HttpFetch", tt.denied)
				if srv.hits.Load() != before {
					t.Fatal("server was reached")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Body != "reached" {
				t.Fatalf("result = %+v", res)
			}
		})
	}
}

// listenV6 serves on [::1] and returns its URL, or "" without IPv6.
func listenV6(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return ""
	}
	s := &http.Server{Handler: text("reached")}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return "http://" + l.Addr().String() + "/"
}

// A redirect hop's dial is checked too: an allowed name on a wildcard
// that resolves to loopback is refused even as the second hop.
func TestHTTPRedirectHopDialCheck(t *testing.T) {
	target := newServer(t, text("internal"))
	srv := newServer(t, redirectTo(http.StatusFound, "http://internal.example.test:"+target.port()+"/"))
	h := NewHTTPFetch(withResolver(staticResolver(map[string][]string{"internal.example.test": {"127.0.0.1"}})))
	_, err := callHTTP(t, h, httpPolicy(t, "127.0.0.1", "*.example.test"), urlArgs(srv.URL))
	wantDenial(t, err, "HttpFetch", "127.0.0.1")
	if target.hits.Load() != 0 {
		t.Fatal("internal server was reached")
	}
	if !strings.Contains(err.Error(), "internal.example.test") {
		t.Fatalf("denial does not name the host: %v", err)
	}
}
