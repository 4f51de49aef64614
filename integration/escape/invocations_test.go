//go:build integration

package escape

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillrun/skillrun/store"
)

// holder is invocation A of the cross-invocation cases: it connects to its
// broker, says so with its uid, holds until the host creates the file
// named by its argument (in a directory it declares, so it sees the file
// appear) or 30 s pass, and checks its broker still answers at the end.
const holder = py + `
connect()
call("tool.list", {})
out("uid", os.getuid())
out("ready", 1)
deadline = time.time() + 30
while not os.path.exists(sys.argv[1]) and time.time() < deadline:
    time.sleep(0.02)
out("after", ",".join(t["name"] for t in call("tool.list", {})["result"]["tools"]))
`

// startHolder writes and starts A with a fixed invocation id, allowed Read
// on files besides its release directory, and waits until it is
// connected. It returns A, its uid, and the function that lets it end.
func startHolder(t *testing.T, e *env, name, id string, files ...string) (*proc, string, func()) {
	t.Helper()
	flags := t.TempDir()
	os.Chmod(flags, 0o755)
	var decl []string
	for _, f := range append(files, flags+"/**") {
		decl = append(decl, strconv.Quote(f))
	}
	dir := e.skill(name, "allowed-tools: Read\nx-allowed-files: ["+strings.Join(decl, ", ")+"]", holder)
	release := filepath.Join(flags, "release")
	ready := make(chan string, 1)
	var uid string
	p := e.start(dir, run{flags: []string{"--invocation-id", id}, args: []string{release}, onLine: func(l string) {
		if v, ok := strings.CutPrefix(l, "uid="); ok {
			uid = v
		}
		if l == "ready=1" {
			ready <- uid
		}
	}})
	done := func() { os.WriteFile(release, nil, 0o644) }
	t.Cleanup(done)
	select {
	case u := <-ready:
		return p, u, done
	case <-time.After(20 * time.Second):
		r := p.wait()
		t.Fatalf("invocation A never got ready: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return nil, "", nil
}

// toolCalls counts the tool calls audited on invocation id in root.
func toolCalls(t *testing.T, root, id string) int {
	t.Helper()
	st, err := store.Open(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.Rows(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if r.Kind == store.KindToolCallStarted || r.Kind == store.KindToolDenied {
			n++
		}
	}
	return n
}

// Case 20: with invocation A running, invocation B (same state root) goes
// for A's socket, the state root and A's processes: none is visible. Then
// B', which declares the host's /tmp/** and so sees A's socket file, tries
// to connect to it (its uid is not A's: EACCES), chmod it and unlink it
// (the declared /tmp is mounted read-only: EROFS). A's broker still
// answers and audited no call of theirs.
func TestEscapeOtherInvocationState(t *testing.T) {
	e := newEnv(t)
	idA := fmt.Sprintf("esc-a-%d", time.Now().UnixNano())
	sockA := "/tmp/cyberos-skill-broker." + idA + ".sock"
	pa, uidA, release := startHolder(t, e, "esc-holder", idA)

	b := e.skill("esc-prober", "", py+`
sock, root, idA = sys.argv[1], sys.argv[2], sys.argv[3]
attempt("stat_a_socket", lambda: os.stat(sock))
attempt("connect_a_socket", lambda: socket.socket(socket.AF_UNIX).connect(sock))
attempt("stat_var_lib", lambda: os.stat("/var/lib/skillrun"))
attempt("stat_state_root", lambda: os.stat(root))
attempt("stat_state_db", lambda: os.stat(root + "/state.db"))
attempt("stat_a_rootfs", lambda: os.stat(root + "/run/" + idA + "/rootfs"))
attempt("list_run_skillrun", lambda: os.listdir("/run/skillrun"))
uids = set()
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            st = open("/proc/%s/status" % p).read()
        except OSError:
            continue
        uids.add([l.split()[1] for l in st.splitlines() if l.startswith("Uid:")][0])
out("proc_uids", ",".join(sorted(uids)))
out("uid", os.getuid())
`)
	rb := e.exec(b, run{args: []string{sockA, e.root, idA}})
	wantExit(t, rb, 0)
	uidB := lines(rb.stdout)["uid"]
	expect(t, rb, map[string]string{
		"stat_a_socket": "ENOENT", "connect_a_socket": "ENOENT", "stat_var_lib": "ENOENT",
		"stat_state_root": "ENOENT", "stat_state_db": "ENOENT", "stat_a_rootfs": "ENOENT",
		"list_run_skillrun": "EACCES", "proc_uids": "0," + uidB,
	})
	if uidB == uidA {
		t.Errorf("concurrent invocations A and B of one state root share uid %s", uidA)
	}

	b2 := e.skill("esc-tmp-prober", `x-allowed-files: ["/tmp/**"]`, py+`
sock = sys.argv[1]
attempt("stat_a_socket", lambda: os.stat(sock))
attempt("connect_a_socket", lambda: socket.socket(socket.AF_UNIX).connect(sock))
attempt("chmod_a_socket", lambda: os.chmod(sock, 0o777))
attempt("unlink_a_socket", lambda: os.unlink(sock))
`)
	rb2 := e.exec(b2, run{args: []string{sockA}})
	wantExit(t, rb2, 0)
	expect(t, rb2, map[string]string{
		"stat_a_socket": "ok", "connect_a_socket": "EACCES", "chmod_a_socket": "EROFS", "unlink_a_socket": "EROFS",
	})

	release()
	ra := pa.wait()
	wantExit(t, ra, 0)
	expect(t, ra, map[string]string{"after": "Read"})
	if n := toolCalls(t, e.root, idA); n != 0 {
		t.Errorf("invocation A's audit holds %d tool calls it never made", n)
	}
}

// Case 20, across state roots: the uid lease lives in the state root
// (<root>/uids), so two invocations of two roots running at once get the
// same uid. B declares the host's /tmp/** (read-only), sees A's broker
// socket there, and A's socket is owned by B's uid: B connects to A's
// broker and calls Read with A's grant, on a root-only file B was never
// granted. Must fail: distinct uids, no connection, no byte of the file,
// no call in A's audit.
func TestEscapeOtherInvocationBrokerAcrossStateRoots(t *testing.T) {
	e1, e2 := newEnv(t), newEnv(t)
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret")
	const secretText = "only-invocation-a-may-read-this"
	os.WriteFile(secret, []byte(secretText), 0o600)
	idA := fmt.Sprintf("esc-xroot-%d", time.Now().UnixNano())
	sockA := "/tmp/cyberos-skill-broker." + idA + ".sock"
	pa, uidA, release := startHolder(t, e1, "esc-holder-a", idA, secret)

	b := e2.skill("esc-xroot-prober", `x-allowed-files: ["/tmp/**"]`, py+`
sock, secret = sys.argv[1], sys.argv[2]
out("uid", os.getuid())
attempt("read_secret_directly", lambda: open(secret).read())
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sock)
    out("connect_a_socket", "ok")
except OSError as err:
    out("connect_a_socket", ename(err.errno))
    sys.exit(0)
_sock = s
r = call("tool.call", {"tool": "Read", "args": {"path": secret}})
out("read_via_a", ("body:" + r["result"]["body"]) if "result" in r else "error:" + r["error"]["message"])
`)
	rb := e2.exec(b, run{args: []string{sockA, secret}})
	release()
	ra := pa.wait()
	wantExit(t, rb, 0)
	wantExit(t, ra, 0)
	got := lines(rb.stdout)
	if got["uid"] == uidA {
		t.Errorf("invocations of two state roots running at once share uid %s: the uid lease is per --root (%s/uids)", uidA, e1.root)
	}
	if got["read_secret_directly"] != "EACCES" {
		t.Errorf("read_secret_directly = %q, want EACCES", got["read_secret_directly"])
	}
	if got["connect_a_socket"] != "EACCES" {
		t.Errorf("invocation B connected to invocation A's broker socket: connect = %q, want EACCES", got["connect_a_socket"])
	}
	if strings.Contains(rb.stdout, secretText) {
		t.Errorf("invocation B read a file only A was granted, through A's broker: %s", got["read_via_a"])
	}
	if n := toolCalls(t, e1.root, idA); n != 0 {
		t.Errorf("invocation A's audit holds %d tool calls made by invocation B (attributed to A)", n)
	}
}

// 26+: the broker socket is the invocation's way out, and on the host it
// belongs to the invocation's uid. From inside, the skill tries to chmod it
// world-writable, reset its times, unlink and rename it. The host's socket
// must keep mode 0600 and its times, and another host user must still be
// unable to connect.
func TestEscapeBrokerSocketTamper(t *testing.T) {
	e := newEnv(t)
	requires(t, setpriv)
	id := fmt.Sprintf("esc-sock-%d", time.Now().UnixNano())
	sock := "/tmp/cyberos-skill-broker." + id + ".sock"
	dir := e.skill("esc-socket-tamper", "allowed-tools: Read", py+`
connect()
out("connected", 1)
time.sleep(0.3)
p = os.environ["CYBEROS_BROKER_SOCKET"]
attempt("chmod_socket", lambda: os.chmod(p, 0o777))
attempt("utime_socket", lambda: os.utime(p, (0, 0)))
attempt("unlink_socket", lambda: os.unlink(p))
attempt("rename_socket", lambda: os.rename(p, "/run/skillrun/x"))
attempt("chown_socket", lambda: os.chown(p, 0, 0))
out("tampered", 1)
time.sleep(1.0)
out("after", ",".join(t["name"] for t in call("tool.list", {})["result"]["tools"]))
`)
	var before, after os.FileInfo
	var strangerOut string
	p := e.start(dir, run{flags: []string{"--invocation-id", id}, onLine: func(l string) {
		switch l {
		case "connected=1":
			before, _ = os.Stat(sock)
		case "tampered=1":
			after, _ = os.Stat(sock)
			// Another host user (nobody) tries the socket the skill tampered
			// with: it must not get in.
			b, _ := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
				"/usr/bin/python3", "-c", "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(sys.argv[1]); print('connected')\nexcept OSError as e: print(e.strerror)", sock).CombinedOutput()
			strangerOut = strings.TrimSpace(string(b))
		}
	}})
	r := p.wait()
	wantExit(t, r, 0)
	expect(t, r, map[string]string{"unlink_socket": "EROFS", "rename_socket": "EROFS", "after": "Read"})
	// EPERM (not the owner) or EROFS (a read-only bind): either will do.
	if c := lines(r.stdout)["chown_socket"]; c == "ok" || c == "" {
		t.Errorf("chown_socket = %q, want a failure", c)
	}
	if before == nil || after == nil {
		t.Fatalf("the host never saw the socket %s", sock)
	}
	if after.Mode() != before.Mode() || after.Mode().Perm() != 0o600 {
		t.Errorf("the skill changed the host's broker socket mode: %v -> %v (chmod_socket=%s)", before.Mode(), after.Mode(), lines(r.stdout)["chmod_socket"])
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the skill changed the host's broker socket times: %s -> %s", before.ModTime(), after.ModTime())
	}
	if strangerOut == "connected" {
		t.Errorf("another host user (uid 65534) connected to the invocation's broker after the skill's chmod")
	}
}
