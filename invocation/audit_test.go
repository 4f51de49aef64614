package invocation

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/skill"
	"github.com/skillrun/skillrun/store"
	"github.com/skillrun/skillrun/tools"
)

const testTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// lockStore takes the database's write lock from a second connection, as
// another skillrun process holding a long transaction would, and returns
// the function that lets it go. Readers are not blocked (WAL).
func lockStore(t *testing.T, st *store.Store) (release func()) {
	t.Helper()
	db := secondConn(t, st)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
				t.Errorf("release lock: %v", err)
			}
			conn.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// secondConn opens the store's database as another process would.
func secondConn(t *testing.T, st *store.Store) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: st.Path(), OmitHost: true, RawQuery: "_pragma=busy_timeout(10000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func closeWithin(w *auditWriter, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	w.Close(ctx)
}

func recordN(w *auditWriter, kind string, n int) {
	for i := range n {
		w.Record(context.Background(), kind, map[string]any{"i": i})
	}
}

// TestAuditWriterWrites checks order, timestamps and the trace column.
func TestAuditWriterWrites(t *testing.T) {
	st := openStore(t)
	w := newAuditWriter(st, slog.New(slog.DiscardHandler), "inv", "sk", testTrace, 0)
	w.start()
	before := time.Now()
	w.Record(t.Context(), store.KindInvokedStarted, map[string]any{})
	w.Record(t.Context(), store.KindToolCallStarted, map[string]any{"trace_id": "0af7651916cd43dd8448eb211c80319c"})
	recordN(w, store.KindToolDenied, 600) // more than one batch
	closeWithin(w, 10*time.Second)
	rows, err := st.Rows(t.Context(), "inv")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 602 || w.Written() != 602 || w.Lost() != 0 {
		t.Fatalf("%d rows, written %d, lost %d; want 602, 602, 0", len(rows), w.Written(), w.Lost())
	}
	if rows[0].Kind != store.KindInvokedStarted || rows[0].TraceID != testTrace || rows[1].TraceID != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("first rows %+v %+v", rows[0], rows[1])
	}
	for i, r := range rows[2:] {
		var p struct{ I int }
		if err := json.Unmarshal(r.Payload, &p); err != nil || p.I != i || r.SkillID != "sk" {
			t.Fatalf("row %d: %s %s, want i=%d", i+2, r.SkillID, r.Payload, i)
		}
	}
	if rows[0].TS.Before(before.Add(-time.Millisecond)) || rows[601].TS.After(time.Now()) {
		t.Errorf("timestamps %s..%s outside the test", rows[0].TS, rows[601].TS)
	}
}

// TestAuditWriterLosses checks that every row is either written or lost,
// counted exactly, and that a lost row is really not in the store.
func TestAuditWriterLosses(t *testing.T) {
	tests := []struct {
		name          string
		max           int
		run           func(t *testing.T, st *store.Store, w *auditWriter)
		written, lost int64
	}{
		{name: "store closed for good", run: func(t *testing.T, st *store.Store, w *auditWriter) {
			w.start()
			st.Close()
			recordN(w, store.KindToolCallStarted, 5)
			closeWithin(w, 300*time.Millisecond)
		}, written: 0, lost: 5},
		{name: "locked past the flush deadline", run: func(t *testing.T, st *store.Store, w *auditWriter) {
			release := lockStore(t, st)
			w.start()
			recordN(w, store.KindToolCallStarted, 5)
			closeWithin(w, time.Second)
			release()
		}, written: 0, lost: 5},
		{name: "locked, a write waiting for the lock", run: func(t *testing.T, st *store.Store, w *auditWriter) {
			release := lockStore(t, st)
			w.start()
			recordN(w, store.KindToolCallStarted, 5)
			time.Sleep(200 * time.Millisecond) // the writer is in the store's busy wait
			start := time.Now()
			closeWithin(w, 500*time.Millisecond)
			if d := time.Since(start); d > store.BusyTimeout/2 {
				t.Errorf("Close took %s: the deadline did not cut the waiting write short", d)
			}
			release()
		}, written: 0, lost: 5},
		{name: "written, then locked", run: func(t *testing.T, st *store.Store, w *auditWriter) {
			w.start()
			recordN(w, store.KindToolCallStarted, 3)
			waitFor(t, "3 rows written", func() bool { return w.Written() == 3 })
			release := lockStore(t, st)
			recordN(w, store.KindToolCallCompleted, 2)
			closeWithin(w, time.Second)
			release()
		}, written: 3, lost: 2},
		{name: "queue full", max: 4, run: func(t *testing.T, st *store.Store, w *auditWriter) {
			recordN(w, store.KindToolCallStarted, 10) // before start: nothing leaves the queue
			w.start()
			closeWithin(w, 10*time.Second)
		}, written: 4, lost: 6},
		{name: "invalid row", run: func(t *testing.T, st *store.Store, w *auditWriter) {
			w.Record(t.Context(), store.KindToolCallStarted, nil)
			w.Record(t.Context(), "skill.no_such_kind", nil)
			w.Record(t.Context(), store.KindToolCallCompleted, nil)
			w.start()
			closeWithin(w, 10*time.Second)
		}, written: 2, lost: 1},
		{name: "recorded after close", run: func(t *testing.T, st *store.Store, w *auditWriter) {
			w.start()
			recordN(w, store.KindToolCallStarted, 2)
			closeWithin(w, 10*time.Second)
			recordN(w, store.KindToolCallCompleted, 1)
		}, written: 2, lost: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t)
			var logs bytes.Buffer
			w := newAuditWriter(st, slog.New(slog.NewTextHandler(&logs, nil)), "inv", "sk", testTrace, tt.max)
			tt.run(t, st, w)
			if w.Written() != tt.written || w.Lost() != tt.lost {
				t.Fatalf("written %d lost %d, want %d %d", w.Written(), w.Lost(), tt.written, tt.lost)
			}
			if tt.lost > 0 && !strings.Contains(logs.String(), "level=ERROR msg=\"audit") {
				t.Errorf("losses not logged at ERROR:\n%s", logs.String())
			}
			if st2, err := store.Open(t.Context(), filepath.Dir(st.Path())); err == nil {
				defer st2.Close()
				rows, err := st2.Rows(t.Context(), "inv")
				if err != nil || int64(len(rows)) != tt.written {
					t.Errorf("store holds %d rows (%v), want the %d written", len(rows), err, tt.written)
				}
			} else {
				t.Fatal(err)
			}
		})
	}
}

// echoTool exercises no capability; a real tool behind a real socket.
type echoTool struct{}

func (echoTool) Spec() tools.Spec {
	return tools.Spec{Name: "Echo", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (echoTool) Invoke(_ context.Context, c tools.Call) (any, error) {
	return map[string]any{"args": c.Args, "trace_id": c.TraceID}, nil
}

// serveBroker serves a skill allowed Echo on a real socket, auditing
// through w, and returns a client factory.
func serveBroker(t *testing.T, w *auditWriter) func() *jsonrpc.Client {
	t.Helper()
	m, diags := skill.Parse("SKILL.md", []byte("---\nname: sk\ndescription: d\nallowed-tools: Echo\n---\n"))
	if len(diags) > 0 {
		t.Fatalf("SKILL.md: %v", diags)
	}
	snap := skill.NewSnapshot(m, t.TempDir(), "SKILL.md", "hash", nil)
	cat, err := tools.Catalog(append(tools.NativeSpecs(), echoTool{}.Spec()))
	if err != nil {
		t.Fatal(err)
	}
	enf, _, err := enforce.Compile(snap, cat)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(echoTool{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Config{Snapshot: snap, Enforcer: enf, Registry: reg, InvocationID: "inv", Audit: w, TraceID: testTrace})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "b.sock")
	l, err := broker.Listen(sock, broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- b.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return func() *jsonrpc.Client {
		c, err := jsonrpc.Dial(t.Context(), sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// TestThousandToolCalls is seed §10's "1000 rapid tool calls": over four
// connections at once, every call gets exactly one started and one
// completed row, in that order, with matching ids, and none is lost.
func TestThousandToolCalls(t *testing.T) {
	st := openStore(t)
	w := newAuditWriter(st, slog.New(slog.DiscardHandler), "inv", "sk", testTrace, 0)
	w.start()
	dial := serveBroker(t, w)
	const conns, per = 4, 250
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for c := range conns {
		client := dial()
		wg.Go(func() {
			for i := range per {
				if err := client.CallTool(context.Background(), "Echo", map[string]int{"c": c, "i": i}, "", nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	closeWithin(w, 10*time.Second)
	if w.Written() != 2*conns*per || w.Lost() != 0 {
		t.Fatalf("written %d lost %d, want %d 0", w.Written(), w.Lost(), 2*conns*per)
	}
	checkPairs(t, st, "inv", conns*per)
}

// checkPairs checks that each call_id has one started row, then one
// completed row, both with the invocation's ids and the trace column equal
// to the payload's trace_id.
func checkPairs(t *testing.T, st *store.Store, id string, calls int) {
	t.Helper()
	rows, err := st.Rows(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	type pair struct{ started, completed int64 }
	seen := map[string]*pair{}
	for _, r := range rows {
		var p struct {
			CallID       string `json:"call_id"`
			TraceID      string `json:"trace_id"`
			InvocationID string `json:"invocation_id"`
		}
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.TraceID != testTrace || r.TraceID != testTrace || p.InvocationID != id || r.InvocationID != id {
			t.Fatalf("row %d: column trace %s, payload %s", r.Seq, r.TraceID, r.Payload)
		}
		if seen[p.CallID] == nil {
			seen[p.CallID] = &pair{}
		}
		switch s := seen[p.CallID]; {
		case r.Kind == store.KindToolCallStarted && s.started == 0:
			s.started = r.Seq
		case r.Kind == store.KindToolCallCompleted && s.started != 0 && s.completed == 0:
			s.completed = r.Seq
		default:
			t.Fatalf("call %s: unexpected %s row %d", p.CallID, r.Kind, r.Seq)
		}
	}
	if len(seen) != calls {
		t.Fatalf("%d calls in the audit, want %d", len(seen), calls)
	}
	for id, s := range seen {
		if s.completed == 0 {
			t.Errorf("call %s never completed", id)
		}
	}
}

// TestToolCallsDuringOutage: while the store cannot take rows, tool calls
// still complete at once; their rows arrive once it can, none lost. With
// the write lock held by another process the writer waits in the store's
// busy timeout; with the audit table gone every write fails at once, and
// the writer backs off and retries.
func TestToolCallsDuringOutage(t *testing.T) {
	tests := []struct {
		name      string
		outage    func(*testing.T, *store.Store) (end func())
		wantRetry bool
	}{
		{"write lock held", lockStore, false},
		{"audit table gone", hideAuditTable, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t)
			var logs bytes.Buffer
			w := newAuditWriter(st, slog.New(slog.NewTextHandler(&logs, nil)), "inv", "sk", testTrace, 0)
			w.start()
			client := serveBroker(t, w)()
			end := tt.outage(t, st)
			start := time.Now()
			for i := range 20 {
				if err := client.CallTool(t.Context(), "Echo", map[string]int{"i": i}, "", nil); err != nil {
					t.Fatal(err)
				}
			}
			// A writer in the call path would have waited out the busy
			// timeout (or failed) on the first call already.
			if d := time.Since(start); d > store.BusyTimeout/2 {
				t.Fatalf("20 calls took %s during the outage: they waited for the store", d)
			}
			time.Sleep(time.Second - time.Since(start))
			if w.Written() != 0 {
				t.Fatalf("%d rows written during the outage", w.Written())
			}
			end()
			waitFor(t, "rows after the outage", func() bool { return w.Written() == 40 })
			closeWithin(w, 10*time.Second)
			if w.Lost() != 0 {
				t.Fatalf("lost %d", w.Lost())
			}
			retried := strings.Contains(logs.String(), "audit store unavailable") && strings.Contains(logs.String(), "writable again")
			if retried != tt.wantRetry {
				t.Errorf("retried %v, want %v; log:\n%s", retried, tt.wantRetry, logs.String())
			}
			checkPairs(t, st, "inv", 20)
		})
	}
}

// hideAuditTable renames the audit table from a second connection, so
// every insert fails at once ("no such table"), until the returned
// function puts it back.
func hideAuditTable(t *testing.T, st *store.Store) (end func()) {
	t.Helper()
	db := secondConn(t, st)
	if _, err := db.ExecContext(t.Context(), "ALTER TABLE audit RENAME TO audit_hidden"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	end = func() {
		once.Do(func() {
			if _, err := db.ExecContext(context.Background(), "ALTER TABLE audit_hidden RENAME TO audit"); err != nil {
				t.Errorf("restore audit table: %v", err)
			}
		})
	}
	t.Cleanup(end)
	return end
}

// TestFinishCountsAudit runs begin and finish around some rows: seq puts
// invoked_started first and invoked_completed last, which carries the
// counts; with the store gone, the loss of invoked_completed is logged at
// ERROR.
func TestFinishCountsAudit(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			st := openStore(t)
			var logs bytes.Buffer
			inv := testInvocation(t, st, slog.New(slog.NewTextHandler(&logs, nil)))
			if err := inv.begin(t.Context(), enforce.IsolationRlimitOnly); err != nil {
				t.Fatal(err)
			}
			inv.audit(t.Context(), store.KindToolCallStarted, map[string]any{"trace_id": testTrace})
			inv.audit(t.Context(), "skill.no_such_kind", nil) // refused by the store: lost
			inv.audit(t.Context(), store.KindTimeout, map[string]any{})
			if broken {
				waitFor(t, "3 rows written", func() bool { return inv.auditor.Written() == 3 })
				st.Close()
				inv.audit(t.Context(), store.KindToolCallCompleted, map[string]any{})
			}
			inv.finish(&Result{Outcome: OutcomeCompleted}, nil)
			if broken {
				if !strings.Contains(logs.String(), `level=ERROR msg="audit row lost" invocation=inv-x kind=skill.invoked_completed`) {
					t.Fatalf("lost invoked_completed not logged at ERROR:\n%s", logs.String())
				}
				return
			}
			rows, err := st.Rows(t.Context(), "inv-x")
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, r := range rows {
				kinds = append(kinds, r.Kind)
			}
			want := []string{store.KindInvokedStarted, store.KindToolCallStarted, store.KindTimeout, store.KindInvokedCompleted}
			if strings.Join(kinds, " ") != strings.Join(want, " ") {
				t.Fatalf("rows %v, want %v", kinds, want)
			}
			var p struct {
				Written int64 `json:"audit_rows_written"`
				Lost    int64 `json:"audit_rows_lost"`
			}
			last := rows[len(rows)-1]
			if err := json.Unmarshal(last.Payload, &p); err != nil || p.Written != 3 || p.Lost != 1 || last.TraceID != inv.traceID {
				t.Fatalf("invoked_completed %s (trace %s), want 3 written, 1 lost, trace %s", last.Payload, last.TraceID, inv.traceID)
			}
		})
	}
}

func testInvocation(t *testing.T, st *store.Store, log *slog.Logger) *invocation {
	t.Helper()
	m, _ := skill.Parse("SKILL.md", []byte("---\nname: sk\ndescription: d\n---\n"))
	return &invocation{
		opts:  withDefaults(Options{InvocationID: "inv-x", Root: t.TempDir(), Logger: log}),
		store: st, log: log, started: time.Now(), snap: skill.NewSnapshot(m, t.TempDir(), "SKILL.md", "hash", nil),
		traceID: broker.NewTraceID(), auditFlush: 300 * time.Millisecond,
	}
}
