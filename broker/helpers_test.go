package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/skill"
	"github.com/skillrun/skillrun/telemetry"
	"github.com/skillrun/skillrun/tools"
)

// need is one precondition of a test; requires skips with the first unmet
// one's reason, so each test states its needs in one line.
type need struct {
	ok  func() bool
	why string
}

var root = need{func() bool { return os.Geteuid() == 0 }, "needs root: chown of the socket to another uid"}

func requires(t *testing.T, needs ...need) {
	t.Helper()
	for _, n := range needs {
		if !n.ok() {
			t.Skip(n.why)
		}
	}
}

// boom is a tool with no capability that panics: it needs no Prepare, and
// shows a tool's panic does not end the broker.
type boom struct{}

func (boom) Spec() tools.Spec {
	return tools.Spec{Name: "Boom", Description: "panics", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (boom) Invoke(context.Context, tools.Call) (any, error) { panic("tool bug") }

// unchecked exercises a capability but has no Prepare.
type unchecked struct{}

func (unchecked) Spec() tools.Spec {
	return tools.Spec{Name: "Leaky", InputSchema: json.RawMessage(`{"type":"object"}`), Capabilities: []enforce.Capability{enforce.CapNetwork}}
}

func (unchecked) Invoke(context.Context, tools.Call) (any, error) { return nil, nil }

// recorder is an Auditor that keeps every row.
type recorder struct {
	mu   sync.Mutex
	rows []row
}

type row struct {
	kind    string
	payload map[string]any
}

func (r *recorder) Record(_ context.Context, kind string, payload map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, row{kind, payload})
}

func (r *recorder) take() []row {
	r.mu.Lock()
	defer r.mu.Unlock()
	rows := r.rows
	r.rows = nil
	return rows
}

// fixture is a broker serving on a real socket with a client connected.
type fixture struct {
	dir    string // the real directory x-allowed-files grants
	sock   string
	broker *broker.Broker
	client *jsonrpc.Client
	audit  *recorder
	stop   func() error // cancels Serve and returns its error
}

// frontmatter is the skill every fixture serves: Read on dir; Write and
// Task allowed but not served here; Bash disallowed; Boom allowed.
func frontmatter(dir string) string {
	files, _ := json.Marshal([]string{dir + "/**"})
	return "---\nname: t\ndescription: d\nallowed-tools: Read, Write, Boom, Task\ndisallowed-tools: Bash\nx-allowed-files: " + string(files) + "\n---\n"
}

// compile builds the snapshot and the enforcer. The enforcer knows every
// native tool, so Write is allowed although the registry lacks it, and the
// extra specs of test tools.
func compile(t testing.TB, fm string, extra ...tools.Spec) (*skill.Snapshot, *enforce.Enforcer) {
	t.Helper()
	m, diags := skill.Parse("SKILL.md", []byte(fm))
	for _, d := range diags {
		if d.Severity == skill.SeverityError {
			t.Fatalf("SKILL.md: %s", d)
		}
	}
	snap := skill.NewSnapshot(m, t.TempDir(), "SKILL.md", "hash", nil)
	cat, err := tools.Catalog(append(append(tools.NativeSpecs(), boom{}.Spec()), extra...))
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := enforce.Compile(snap, cat)
	if err != nil {
		t.Fatal(err)
	}
	return snap, e
}

func registry(t testing.TB, ts ...tools.Tool) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func realTempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// start serves the standard skill on a socket in a temp dir and dials it.
func start(t testing.TB) *fixture {
	t.Helper()
	return startWith(t, nil)
}

// startWith is start with telemetry.
func startWith(t testing.TB, tel *telemetry.Telemetry) *fixture {
	t.Helper()
	f := &fixture{dir: realTempDir(t), audit: &recorder{}}
	snap, e := compile(t, frontmatter(f.dir))
	b, err := broker.New(broker.Config{
		Snapshot:     snap,
		Enforcer:     e,
		Registry:     registry(t, tools.Read{}, boom{}),
		InvocationID: "inv-1",
		Audit:        f.audit,
		Telemetry:    tel,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.broker = b
	f.sock = filepath.Join(t.TempDir(), "b.sock")
	l, err := broker.Listen(f.sock, broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	f.stop = serve(t, b, l)
	f.client = dial(t, f.sock)
	return f
}

// serve runs b.Serve in the background; the returned func cancels it and
// returns its error. Cleanup stops it too.
func serve(t testing.TB, b *broker.Broker, l *broker.Listener) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, l) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				err = errors.New("Serve did not return after cancel")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return stop
}

func dial(t testing.TB, sock string) *jsonrpc.Client {
	t.Helper()
	c, err := jsonrpc.Dial(t.Context(), sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (f *fixture) write(t testing.TB, name, body string) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
