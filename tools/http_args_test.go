package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/skillrun/skillrun/jsonrpc"
)

func TestCheckTraceParent(t *testing.T) {
	tests := []struct {
		tp string
		ok bool
	}{
		{"", true},
		{testTraceParent, true},
		{"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future", true},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", false},
		{"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", false},
		{"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", false},
		{"00-00000000000000000000000000000000-b7ad6b7169203331-01", false},
		{"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", false},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", false},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333\n-01", false},
	}
	for _, tt := range tests {
		if err := checkTraceParent(tt.tp); (err == nil) != tt.ok {
			t.Errorf("checkTraceParent(%q) = %v, want ok=%v", tt.tp, err, tt.ok)
		}
	}
}

func TestHTTPArgs(t *testing.T) {
	srv := newServer(t, text("x"))
	e := httpPolicy(t, "127.0.0.1")
	small := WithHTTPLimits(HTTPLimits{MaxRequestBody: 4})
	tests := []struct {
		name  string
		tool  *HTTPTool
		args  string
		field string
	}{
		{"no url", NewHTTPFetch(), `{}`, "url"},
		{"unknown field", NewHTTPFetch(), `{"url":"` + srv.URL + `","method":"DELETE"}`, "method"},
		{"fetch with a body", NewHTTPFetch(), postArgs(srv.URL, "x"), "body"},
		{"post without a body", NewHTTPPost(), urlArgs(srv.URL), "body"},
		{"body over the cap", NewHTTPPost(small), postArgs(srv.URL, "12345"), "body"},
		{"url too long", NewHTTPFetch(), urlArgs(srv.URL + "/" + strings.Repeat("a", maxURLLength)), "url"},
		{"headers not strings", NewHTTPFetch(), `{"url":"` + srv.URL + `","headers":{"A":1}}`, "headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := callHTTP(t, tt.tool, e, tt.args)
			var pe *jsonrpc.ParamsError
			if !errors.As(err, &pe) || !errors.Is(err, jsonrpc.ErrInvalidParams) {
				t.Fatalf("err = %v, want invalid params", err)
			}
			if pe.Field != tt.field {
				t.Fatalf("field = %q, want %q", pe.Field, tt.field)
			}
		})
	}
	if srv.hits.Load() != 0 {
		t.Fatal("server was reached")
	}
	// At the cap exactly is fine.
	if _, err := callHTTP(t, NewHTTPPost(small), e, postArgs(srv.URL, "1234")); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPRequestHeaders(t *testing.T) {
	srv := newServer(t, text("x"))
	e := httpPolicy(t, "127.0.0.1")
	refused := []struct {
		name    string
		headers string
	}{
		{"CRLF in value", `{"X-A":"1\r\nX-Injected: 2"}`},
		{"LF in value", `{"X-A":"1\nX-Injected: 2"}`},
		{"NUL in value", `{"X-A":"1\u0000"}`},
		{"CRLF in name", `{"X-A\r\nX-B":"1"}`},
		{"space in name", `{"X A":"1"}`},
		{"empty name", `{"":"1"}`},
		{"Host", `{"Host":"evil.com"}`},
		{"host lowercase", `{"host":"evil.com"}`},
		{"Content-Length", `{"Content-Length":"0"}`},
		{"Transfer-Encoding", `{"Transfer-Encoding":"chunked"}`},
		{"Connection", `{"Connection":"close"}`},
		{"Upgrade", `{"Upgrade":"websocket"}`},
		{"Keep-Alive", `{"Keep-Alive":"timeout=5"}`},
		{"TE", `{"TE":"trailers"}`},
		{"Proxy-Authorization", `{"Proxy-Authorization":"Basic eA=="}`},
		{"traceparent", `{"traceparent":"` + testTraceParent + `"}`},
		{"tracestate", `{"tracestate":"a=b"}`},
		{"same name twice", `{"X-A":"1","x-a":"2"}`},
		{"value too long", `{"X-A":"` + strings.Repeat("a", maxRequestHeaderValue+1) + `"}`},
		{"too many", manyHeaders(maxRequestHeaders + 1)},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			args := fmt.Sprintf(`{"url":%q,"headers":%s}`, srv.URL, tt.headers)
			_, err := callHTTP(t, NewHTTPFetch(), e, args)
			var pe *jsonrpc.ParamsError
			if !errors.As(err, &pe) || pe.Field != "headers" {
				t.Fatalf("err = %v, want invalid params on headers", err)
			}
		})
	}
	if srv.hits.Load() != 0 {
		t.Fatal("server was reached")
	}
	args := fmt.Sprintf(`{"url":%q,"headers":{"authorization":"Bearer k","X-Api-Key":"k2","User-Agent":"mine","Accept":"text/*"}}`, srv.URL)
	if _, err := callHTTP(t, NewHTTPFetch(), e, args); err != nil {
		t.Fatal(err)
	}
	got := srv.requests()[0].Header
	for k, want := range map[string]string{"Authorization": "Bearer k", "X-Api-Key": "k2", "User-Agent": "mine", "Accept": "text/*"} {
		if got.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, got.Get(k), want)
		}
	}
}

func manyHeaders(n int) string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("X-H%d", i)] = "v"
	}
	b, _ := json.Marshal(m)
	return string(b)
}
