//go:build integration

package escape

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gobwas/glob"

	"github.com/skillrun/skillrun/store"
)

// addHosts appends lines to the host's /etc/hosts for one test (the
// static skillrun resolves with Go's resolver, which reads it on each
// lookup) and takes exactly those lines out again afterwards, leaving
// whatever other tests running at the same time added.
func addHosts(t *testing.T, lines ...string) {
	t.Helper()
	info, err := os.Stat("/etc/hosts")
	if err != nil {
		t.Skipf("needs /etc/hosts to stage rebinding names: %v", err)
	}
	mark := fmt.Sprintf(" # skillrun escape corpus %d", os.Getpid())
	var block strings.Builder
	for _, l := range lines {
		block.WriteString(l + mark + "\n")
	}
	prefix := ""
	if b, err := os.ReadFile("/etc/hosts"); err == nil && len(b) > 0 && b[len(b)-1] != '\n' {
		prefix = "\n" // finish the last line, or it would swallow our first
	}
	f, err := os.OpenFile("/etc/hosts", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Skipf("needs a writable /etc/hosts: %v", err)
	}
	_, err = f.WriteString(prefix + block.String())
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b, err := os.ReadFile("/etc/hosts")
		if err != nil {
			return
		}
		var keep []string
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if !strings.HasSuffix(strings.TrimSuffix(l, "\n"), mark) {
				keep = append(keep, l)
			}
		}
		os.WriteFile("/etc/hosts", []byte(strings.Join(keep, "")), info.Mode().Perm())
	})
}

// listen starts an HTTP server on addr that counts its requests.
func listen(t *testing.T, addr string, h http.Handler) (port int, ok bool) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 0, false
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port, true
}

// rebindDomain is the wildcard the HttpFetch case declares; its staged
// names resolve to addresses the skill must never reach.
const rebindDomain = "skillrun-escape.test"

// fetchAttacks are the URLs of case 21 that must each be a
// domain_violation, by key: direct ones, and targets of the allowed
// server's redirect (from base). q1, q2 and q6 are the forbidden servers'
// ports on 127.0.0.1, 127.0.0.2 and ::1.
func fetchAttacks(base string, q1, q2, q6 int) map[string]string {
	const dom = rebindDomain
	direct := map[string]string{
		"rebind_loopback":     fmt.Sprintf("http://loop.%s:%d/", dom, q1),
		"rebind_metadata":     fmt.Sprintf("http://meta.%s/latest/meta-data/", dom),
		"rebind_private":      fmt.Sprintf("http://priv.%s:%d/", dom, q1),
		"rebind_zero":         fmt.Sprintf("http://zero.%s:%d/", dom, q1),
		"rebind_v6_loopback":  fmt.Sprintf("http://loop6.%s:%d/", dom, q6),
		"rebind_v4_mapped":    fmt.Sprintf("http://mapped.%s:%d/", dom, q1),
		"rebind_trailing_dot": fmt.Sprintf("http://loop.%s.:%d/", dom, q1),
		"rebind_uppercase":    fmt.Sprintf("http://LOOP.%s:%d/", strings.ToUpper(dom), q1),
		"direct_127_0_0_2":    fmt.Sprintf("http://127.0.0.2:%d/", q2),
		"direct_zero":         fmt.Sprintf("http://0.0.0.0:%d/", q1),
		"direct_v6_loopback":  fmt.Sprintf("http://[::1]:%d/", q6),
		"direct_v4_mapped":    fmt.Sprintf("http://[::ffff:127.0.0.2]:%d/", q2),
		"direct_decimal":      fmt.Sprintf("http://2130706434:%d/", q2),
		"direct_localhost":    fmt.Sprintf("http://localhost:%d/", q1),
		"redirect_chain":      fmt.Sprintf("%s/chain?to=http://127.0.0.2:%d/", base, q2),
	}
	redirects := map[string]string{
		"redirect_name":          fmt.Sprintf("http://loop.%s:%d/", dom, q1),
		"redirect_127_0_0_2":     fmt.Sprintf("http://127.0.0.2:%d/", q2),
		"redirect_v6_loopback":   fmt.Sprintf("http://[::1]:%d/", q6),
		"redirect_metadata":      "http://169.254.169.254/latest/meta-data/",
		"redirect_metadata_name": fmt.Sprintf("http://meta.%s/latest/meta-data/", dom),
		"redirect_decimal":       fmt.Sprintf("http://2130706434:%d/", q2),
		"redirect_zero":          fmt.Sprintf("http://0.0.0.0:%d/", q1),
		"redirect_localhost":     fmt.Sprintf("http://localhost:%d/", q1),
		"redirect_userinfo":      fmt.Sprintf("http://127.0.0.1@127.0.0.2:%d/", q2),
		"redirect_v4_mapped":     fmt.Sprintf("http://[::ffff:127.0.0.2]:%d/", q2),
		"redirect_other_domain":  "http://evil.example/",
		"redirect_file_scheme":   "file:///etc/shadow",
	}
	for k, u := range redirects {
		direct[k] = base + "/redir?to=" + u
	}
	return direct
}

// Case 21: DNS rebinding and redirect tricks through HttpFetch. The skill
// may fetch 127.0.0.1 (declared literally) and *.skillrun-escape.test;
// staged names of that wildcard resolve to loopback, the metadata
// address, a private address, 0.0.0.0, ::1 and a v4-mapped loopback, and
// the allowed server redirects to each forbidden target in turn. Every
// attempt is a domain_violation, and the forbidden servers (on 127.0.0.1,
// 127.0.0.2 and ::1) get no request at all.
func TestEscapeHttpFetchRebindAndRedirect(t *testing.T) {
	e := newEnv(t)
	var forbiddenHits atomic.Int64
	var seen atomic.Value
	forbidden := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forbiddenHits.Add(1)
		seen.Store(r.Host + r.URL.String())
		fmt.Fprint(w, "forbidden server")
	})
	q1, _ := listen(t, "127.0.0.1:0", forbidden)
	q2, ok2 := listen(t, "127.0.0.2:0", forbidden)
	q6, ok6 := listen(t, "[::1]:0", forbidden)
	if !ok2 || !ok6 {
		t.Skip("needs 127.0.0.2 and ::1 on the host's loopback for the forbidden servers")
	}
	allowed := http.NewServeMux()
	allowed.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "allowed") })
	allowed.HandleFunc("/redir", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	allowed.HandleFunc("/chain", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/redir?to="+r.URL.Query().Get("to"), http.StatusFound)
	})
	p, _ := listen(t, "127.0.0.1:0", allowed)
	const dom = rebindDomain
	addHosts(t,
		"127.0.0.1 loop."+dom, "169.254.169.254 meta."+dom, "10.0.0.1 priv."+dom,
		"0.0.0.0 zero."+dom, "::1 loop6."+dom, "::ffff:127.0.0.1 mapped."+dom)

	base := fmt.Sprintf("http://127.0.0.1:%d", p)
	var script strings.Builder
	script.WriteString(py + "connect()\n")
	script.WriteString("def fetch(k, u):\n    r = tool('HttpFetch', {'url': u})\n    out(k, ('body:' + r['body']) if isinstance(r, dict) else r)\n")
	script.WriteString(fmt.Sprintf("fetch('allowed', %q)\n", base+"/ok"))
	want := map[string]string{"allowed": "body:allowed"}
	for k, u := range fetchAttacks(base, q1, q2, q6) {
		script.WriteString(fmt.Sprintf("fetch(%q, %q)\n", k, u))
		want[k] = "error:domain_violation"
	}
	dir := e.skill("esc-http-rebind", `allowed-tools: HttpFetch
x-allowed-domains: ["127.0.0.1", "*.`+dom+`"]`, script.String())
	r := e.exec(dir, run{})
	wantExit(t, r, 0)
	expect(t, r, want)
	if n := forbiddenHits.Load(); n != 0 {
		t.Errorf("the forbidden servers got %d requests (last %v)", n, seen.Load())
	}
}

// memoryScope is the one scope case 22 declares; memoryIn is its root.
const (
	memoryScope = "memories/projects/cyberos/**"
	memoryIn    = "memories/projects/cyberos"
)

// memorySeed is the store before case 22: one row in scope, the rest out
// of it (or of another tenant), each with the word zanzibar to search for.
var memorySeed = []store.MemoryRow{
	{Tenant: "default", Path: memoryIn + "/ok.md", Body: "in scope"},
	{Tenant: "default", Path: "memories/people/secret.md", Body: "SECRET zanzibar people"},
	{Tenant: "default", Path: "memories/projects/cyberos-evil/secret.md", Body: "SECRET zanzibar sibling"},
	{Tenant: "default", Path: "memories/projects/secret.md", Body: "SECRET zanzibar parent"},
	{Tenant: "other", Path: memoryIn + "/ok.md", Body: "SECRET zanzibar tenant"},
	{Tenant: "other", Path: memoryIn + "/tenant.md", Body: "SECRET zanzibar tenant only"},
}

// memoryPaths are the traversal attempts of case 22 and what MemoryRead
// must answer: a denial, not_found for a literal name inside the scope, or
// the in-scope row for a path that canonicalises into the scope.
var memoryPaths = []struct{ key, path, want string }{
	{"dotdot", memoryIn + "/../../people/secret.md", "error:scope_violation"},
	{"dotdot_to_sibling", memoryIn + "/../cyberos-evil/secret.md", "error:scope_violation"},
	{"encoded_dots", memoryIn + "/%2e%2e/%2e%2e/people/secret.md", "error:scope_violation"},
	{"encoded_upper", memoryIn + "/%2E%2E%2Fpeople%2Fsecret.md", "error:scope_violation"},
	{"encoded_slash", "memories%2fpeople%2fsecret.md", "error:scope_violation"},
	{"double_encoded", memoryIn + "/%252e%252e/%252e%252e/people/secret.md", "error:not_found"},
	{"doubled_slashes", memoryIn + "//..//..//people//secret.md", "error:scope_violation"},
	{"absolute", "/memories/people/secret.md", "error:scope_violation"},
	{"absolute_in_scope", "/" + memoryIn + "/ok.md", "body:in scope"},
	{"nul", memoryIn + "/ok.md\x00/../../people/secret.md", "error:scope_violation"},
	{"backslash", `memories\people\secret.md`, "error:scope_violation"},
	{"backslash_dotdot", memoryIn + `/..\..\people\secret.md`, "error:scope_violation"},
	{"leading_dotdot", "../memories/people/secret.md", "error:scope_violation"},
	{"above_root", memoryIn + "/../../../../../etc/passwd", "error:scope_violation"},
	{"dot_segments_in_scope", memoryIn + "/./ok.md", "body:in scope"},
	{"dotdot_back_in_scope", memoryIn + "/../cyberos/ok.md", "body:in scope"},
	{"sibling_prefix", "memories/projects/cyberos-evil/secret.md", "error:scope_violation"},
	{"parent", "memories/projects/secret.md", "error:scope_violation"},
	{"scope_root_only", memoryIn, "error:scope_violation"},
	{"two_dot_leader", memoryIn + "/\u2025/\u2025/people/secret.md", "error:not_found"},
	{"fullwidth_dots", memoryIn + "/\uff0e\uff0e/\uff0e\uff0e/people/secret.md", "error:not_found"},
	{"triple_dot", memoryIn + "/.../secret.md", "error:not_found"},
	{"other_tenant_only", memoryIn + "/tenant.md", "error:not_found"},
	{"too_long", memoryIn + "/" + strings.Repeat("a/", 2100) + "x.md", "error:scope_violation"},
}

// memorySearches are case 22's MemorySearch calls (query, scope prefix)
// and their answers: sorted paths, or the denial.
var memorySearches = []struct{ key, query, prefix, want string }{
	{"search.secret", "zanzibar", "", ""},
	{"search.secret_people_prefix", "zanzibar", "memories/people", "error:scope_violation"},
	{"search.secret_dotdot_prefix", "zanzibar", memoryIn + "/../../people", "error:scope_violation"},
	{"search.secret_sibling_prefix", "zanzibar", memoryIn, ""},
	{"search.scope", "scope", "", memoryIn + "/ok.md"},
}

// memoryScript is case 22's skill and its expected answers: the reads and
// searches first, against the seeded store, then the emits.
func memoryScript() (string, map[string]string) {
	var b strings.Builder
	b.WriteString(py + "connect()\n")
	b.WriteString(`def res(r):
    if isinstance(r, dict):
        return "body:" + r["body"] if "body" in r else "path:" + r.get("path", "")
    return r
def search(k, q, p):
    a = {"query": q}
    if p:
        a["path"] = p
    r = tool("MemorySearch", a)
    out(k, ",".join(sorted(x["path"] for x in r["results"])) if isinstance(r, dict) else r)
`)
	want := map[string]string{}
	for _, p := range memoryPaths {
		fmt.Fprintf(&b, "out('read.%s', res(tool('MemoryRead', {'path': %s})))\n", p.key, strconv.Quote(p.path))
		want["read."+p.key] = p.want
	}
	for _, s := range memorySearches {
		fmt.Fprintf(&b, "search(%q, %q, %q)\n", s.key, s.query, s.prefix)
		want[s.key] = s.want
	}
	for i, p := range memoryPaths {
		fmt.Fprintf(&b, "r = tool('MemoryEmit', {'path': %s, 'body': 'ESCAPE %d'})\nout('emit.%s', 'ok' if isinstance(r, dict) else r)\n",
			strconv.Quote(p.path), i, p.key)
		want["emit."+p.key] = "error:scope_violation"
		if strings.HasPrefix(p.want, "body:") || p.want == "error:not_found" {
			want["emit."+p.key] = "ok"
		}
	}
	return b.String(), want
}

// Case 22: memory path traversal through MemoryRead, MemoryEmit and
// MemorySearch, scope memories/projects/cyberos/**. Encoded dots,
// doubled slashes, absolute paths, NUL, backslashes, '..' above the root,
// Unicode look-alikes and a sibling prefix: each is denied, or read as a
// path inside the scope; no call returns an out-of-scope row (or another
// tenant's), and afterwards the store holds no emitted row outside the
// scope and every out-of-scope row as it was.
func TestEscapeMemoryTraversal(t *testing.T) {
	e := newEnv(t)
	st, err := store.Open(t.Context(), e.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range memorySeed {
		if err := st.MemoryPut(t.Context(), row); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	script, want := memoryScript()
	dir := e.skill("esc-memory", "allowed-tools: MemoryRead, MemoryEmit, MemorySearch\nallowed_memory_scopes: [\""+memoryScope+"\"]", script)
	r := e.exec(dir, run{})
	wantExit(t, r, 0)
	expect(t, r, want)
	if strings.Contains(r.stdout, "SECRET") {
		t.Errorf("an out-of-scope row reached the skill:\n%s", r.stdout)
	}

	st, err = store.Open(t.Context(), e.root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := glob.MustCompile(memoryScope, '/')
	for _, tenant := range []string{"default", "other"} {
		rows, err := st.MemoryList(t.Context(), tenant, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if strings.HasPrefix(row.Body, "ESCAPE") && (tenant != "default" || !g.Match(row.Path)) {
				t.Errorf("an emitted row landed outside the scope: %s %q", tenant, row.Path)
			}
		}
	}
	for _, want := range memorySeed[1:] {
		got, err := st.MemoryGet(t.Context(), want.Tenant, want.Path)
		if err != nil || got.Body != want.Body {
			t.Errorf("out-of-scope row %s/%s: %q, %v; want it unchanged", want.Tenant, want.Path, got.Body, err)
		}
	}
}
