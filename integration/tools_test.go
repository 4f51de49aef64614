//go:build integration

package integration

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillrun/skillrun/store"
)

// A path swapped between an allowed file and a symlink to /etc/shadow in a
// tight loop while the skill Reads it 10,000 times: never shadow's bytes.
func TestReadSymlinkSwapRace(t *testing.T) {
	e := newEnv(t)
	shadow, err := os.ReadFile("/etc/shadow")
	if err != nil || len(shadow) == 0 {
		t.Skipf("needs a readable, non-empty /etc/shadow on the host to attack: %v", err)
	}
	data := t.TempDir()
	target := filepath.Join(data, "f")
	os.WriteFile(filepath.Join(data, "real"), []byte("allowed contents\n"), 0o644)
	os.WriteFile(target, []byte("allowed contents\n"), 0o644)
	dir := e.skill("racer", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", data+"/**"), pyClient+`
connect()
ok = denied = other = leaked = 0
for i in range(10000):
    r = call("tool.call", {"tool": "Read", "args": {"path": "`+target+`"}})
    if "result" in r:
        body = r["result"]["body"]
        if body == "allowed contents\n":
            ok += 1
        else:
            leaked += 1
            print("leak=" + body[:40].replace("\n", "|"))
    elif r["error"]["data"].get("reason") == "file_violation":
        denied += 1
    else:
        other += 1
print("ok=%d" % ok)
print("denied=%d" % denied)
print("other=%d" % other)
print("leaked=%d" % leaked)
`)
	var stop atomic.Bool
	done := make(chan int)
	go func() {
		swaps := 0
		tmpLink := filepath.Join(data, "link.tmp")
		tmpFile := filepath.Join(data, "file.tmp")
		for !stop.Load() {
			os.Remove(tmpLink)
			os.Symlink("/etc/shadow", tmpLink)
			os.Rename(tmpLink, target)
			os.WriteFile(tmpFile, []byte("allowed contents\n"), 0o644)
			os.Rename(tmpFile, target)
			swaps++
		}
		done <- swaps
	}()
	r := e.exec(dir, "--timeout", "5m")
	stop.Store(true)
	swaps := <-done
	wantExit(t, r, 0)
	got := lines(r.stdout)
	if got["leaked"] != "0" || strings.Contains(r.stdout, string(shadow[:min(len(shadow), 16)])) {
		t.Fatalf("shadow's bytes reached the skill: %s", r.stdout)
	}
	okN, _ := strconv.Atoi(got["ok"])
	deniedN, _ := strconv.Atoi(got["denied"])
	if okN+deniedN < 9000 {
		t.Errorf("ok %d + denied %d of 10,000 reads (other %s)", okN, deniedN, got["other"])
	}
	t.Logf("%d swaps; %d reads of the allowed file, %d denied, %s other", swaps, okN, deniedN, got["other"])
}

// 1,000 rapid tool calls in one invocation: exactly 1,000 started and
// 1,000 completed rows, with matching ids.
func TestThousandCallsAudited(t *testing.T) {
	e := newEnv(t)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "f"), []byte("x"), 0o644)
	dir := e.skill("rapid", fmt.Sprintf("allowed-tools: Read\nx-allowed-files: [%q]", data+"/f"), pyClient+`
connect()
for i in range(1000):
    r = call("tool.call", {"tool": "Read", "args": {"path": "`+data+`/f"}})
    assert "result" in r, r
print("done=1")
`)
	start := time.Now()
	r := e.exec(dir)
	wantExit(t, r, 0)
	rows := e.rows(r.id)
	count := map[string]int{}
	for _, row := range rows {
		count[row.Kind]++
		if row.InvocationID != r.id {
			t.Fatalf("row of another invocation: %+v", row)
		}
	}
	if count["skill.tool_call_started"] != 1000 || count["skill.tool_call_completed"] != 1000 {
		t.Fatalf("rows: %v", count)
	}
	t.Logf("1,000 calls and their audit in %s", time.Since(start))
}

// addHosts adds names to /etc/hosts for one test (the static skillrun uses
// Go's resolver, which reads it on each lookup) and restores the file.
func addHosts(t *testing.T, lines ...string) {
	t.Helper()
	orig, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Skipf("needs a writable /etc/hosts to stage a rebinding name: %v", err)
	}
	t.Cleanup(func() { os.WriteFile("/etc/hosts", orig, 0o644) })
	extra := "\n# skillrun integration test\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile("/etc/hosts", append(append([]byte{}, orig...), extra...), 0o644); err != nil {
		t.Skipf("needs a writable /etc/hosts: %v", err)
	}
}

// Seed criteria 1, 4, 5, 6, 7, 18 and 19 end to end, with the attacks of
// the tools issue, from a skill inside a real sandbox against real loopback
// servers and the real memory store.
func TestToolsEndToEnd(t *testing.T) {
	e := newEnv(t)
	var hits, forbiddenHits atomic.Int64
	var gotTraceparent atomic.Value
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forbiddenHits.Add(1)
		fmt.Fprint(w, "forbidden server")
	}))
	defer forbidden.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/x" {
			gotTraceparent.Store(r.Header.Get("traceparent"))
		}
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, strings.Replace(forbidden.URL, "127.0.0.1", "127.0.0.2", 1)+"/x", http.StatusFound)
			return
		}
		fmt.Fprint(w, "allowed server")
	}))
	defer allowed.Close()
	port := allowed.Listener.Addr().(*net.TCPAddr).Port
	addHosts(t, "127.0.0.1 rebind-loopback.skillrun.test", "169.254.169.254 rebind-metadata.skillrun.test")

	st, err := store.Open(t.Context(), e.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []store.MemoryRow{
		{Tenant: "default", Path: "memories/projects/cyberos/x.md", Body: "in scope zebra"},
		{Tenant: "default", Path: "memories/people/y.md", Body: "out of scope secretword zebra"},
		{Tenant: "other", Path: "memories/projects/cyberos/z.md", Body: "other tenant secretword"},
	} {
		if err := st.MemoryPut(t.Context(), row); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	os.WriteFile("/tmp/skillrun-it-x.txt", []byte("tmp file"), 0o644)
	defer os.Remove("/tmp/skillrun-it-x.txt")

	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	dir := e.skill("toolbox", `allowed-tools: MemoryRead, MemorySearch, MemoryEmit, HttpFetch, Read, Write
allowed_memory_scopes: ["memories/projects/cyberos/**"]
x-allowed-files: ["/tmp/**"]
x-allowed-domains: ["127.0.0.1", "*.skillrun.test"]`, pyClient+fmt.Sprintf(`
connect()
def tool(name, args, trace=None):
    p = {"tool": name, "args": args}
    if trace:
        p["traceparent"] = trace
    r = call("tool.call", p)
    if "error" in r:
        return "error:" + str((r["error"].get("data") or {}).get("reason"))
    return r["result"]
r = tool("MemoryRead", {"path": "memories/projects/cyberos/x.md"})
print("memread=" + (r["body"] if isinstance(r, dict) else r))
print("memout=%%s" %% tool("MemoryRead", {"path": "memories/people/y.md"}))
print("memdotdot=%%s" %% tool("MemoryRead", {"path": "memories/projects/cyberos/../../people/y.md"}))
r = tool("MemorySearch", {"query": "secretword"})
print("search_secret=%%d" %% len(r["results"]))
r = tool("MemorySearch", {"query": "zebra"})
print("search_zebra=" + ",".join(x["path"] for x in r["results"]))
r = tool("MemoryEmit", {"path": "memories/projects/cyberos/new.md", "body": "emitted"}, "%[1]s")
print("emit_trace=" + r["trace_id"])
r = tool("Read", {"path": "/tmp/skillrun-it-x.txt"})
print("tmpread=" + (r["body"] if isinstance(r, dict) else r))
print("passwd=%%s" %% tool("Read", {"path": "/etc/passwd"}))
r = tool("HttpFetch", {"url": "http://127.0.0.1:%[2]d/x"}, "%[1]s")
print("fetch=%%s" %% (r["body"] if isinstance(r, dict) else r))
print("evil=%%s" %% tool("HttpFetch", {"url": "https://evil.com/y"}))
print("redirect=%%s" %% tool("HttpFetch", {"url": "http://127.0.0.1:%[2]d/redirect"}))
print("rebind_loopback=%%s" %% tool("HttpFetch", {"url": "http://rebind-loopback.skillrun.test:%[2]d/x"}))
print("rebind_metadata=%%s" %% tool("HttpFetch", {"url": "http://rebind-metadata.skillrun.test/latest/meta-data/"}))
print("write_out=%%s" %% tool("Write", {"path": "/etc/skillrun-it", "body": "x"}))
`, tp, port))
	r := e.exec(dir)
	wantExit(t, r, 0)
	got := lines(r.stdout)
	want := map[string]string{
		"memread": "in scope zebra", "memout": "error:scope_violation", "memdotdot": "error:scope_violation",
		"search_secret": "0", "search_zebra": "memories/projects/cyberos/x.md", "emit_trace": "0af7651916cd43dd8448eb211c80319c",
		"tmpread": "tmp file", "passwd": "error:file_violation", "fetch": "allowed server", "evil": "error:domain_violation",
		"redirect": "error:domain_violation", "rebind_loopback": "error:domain_violation", "rebind_metadata": "error:domain_violation",
		"write_out": "error:file_violation",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if tpGot, _ := gotTraceparent.Load().(string); tpGot != tp {
		t.Errorf("the allowed server got traceparent %q, want the skill's %q", tpGot, tp)
	}
	if forbiddenHits.Load() != 0 {
		t.Errorf("the forbidden server got %d requests", forbiddenHits.Load())
	}
	st, _ = store.Open(t.Context(), e.root)
	defer st.Close()
	row, err := st.MemoryGet(t.Context(), "default", "memories/projects/cyberos/new.md")
	if err != nil || row.TraceID != "0af7651916cd43dd8448eb211c80319c" || row.Body != "emitted" {
		t.Errorf("emitted row: %+v, %v", row, err)
	}
	for _, row := range e.rows(r.id) {
		if row.Kind == "skill.tool_call_started" && row.TraceID == "" {
			t.Errorf("audit row without trace_id: %+v", row)
		}
	}
}
