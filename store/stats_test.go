package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestActivitySince(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	midnight := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	for _, inv := range []Invocation{testInvocation("old", midnight.Add(-time.Hour)), testInvocation("new", midnight.Add(time.Hour)), testInvocation("done", midnight)} {
		if err := s.BeginInvocation(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishInvocation(ctx, "done", "completed", 0); err != nil {
		t.Fatal(err)
	}
	var rows []Row
	add := func(n int, kind string, ts time.Time) {
		for range n {
			rows = append(rows, Row{TS: ts, Kind: kind, InvocationID: "new", SkillID: "report"})
		}
	}
	add(3, KindToolCallStarted, midnight.Add(-time.Nanosecond)) // yesterday
	add(5, KindToolCallStarted, midnight)                       // the boundary counts
	add(2, KindToolCallStarted, midnight.Add(time.Hour))
	add(4, KindToolDenied, midnight.Add(time.Minute))
	add(1, KindToolDenied, midnight.Add(-time.Minute))
	add(6, KindToolCallCompleted, midnight.Add(time.Minute)) // not asked for
	if err := s.AuditBatch(ctx, rows); err != nil {
		t.Fatal(err)
	}

	a, err := s.ActivitySince(ctx, midnight, KindToolCallStarted, KindToolDenied, KindTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Active) != 2 || a.Active[0].ID != "old" || a.Active[1].ID != "new" || a.Active[1].SupervisorPID != 4242 {
		t.Errorf("active = %+v, want old then new", a.Active)
	}
	want := map[string]int64{KindToolCallStarted: 7, KindToolDenied: 4, KindTimeout: 0}
	if len(a.Counts) != len(want) {
		t.Errorf("counts = %v, want %v", a.Counts, want)
	}
	for k, n := range want {
		if got, ok := a.Counts[k]; !ok || got != n {
			t.Errorf("count of %s = %d (present %v), want %d", k, got, ok, n)
		}
	}

	all, err := s.ActivitySince(ctx, time.Time{}, KindToolCallStarted)
	if err != nil || all.Counts[KindToolCallStarted] != 10 {
		t.Errorf("all-time count = %v, %v; want 10", all.Counts, err)
	}
	if _, err := s.ActivitySince(ctx, midnight, "skill.nope"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown kind: %v, want ErrInvalid", err)
	}
}

// A status read must not wait for, or take, the write lock: another
// process's open write transaction neither delays it nor shows it rows that
// are not committed.
func TestActivitySinceDuringWrite(t *testing.T) {
	dir := t.TempDir()
	reader, writer := openDir(t, dir), openDir(t, dir)
	ctx := t.Context()
	if err := writer.Audit(ctx, Row{Kind: KindToolCallStarted, InvocationID: "i", SkillID: "s"}); err != nil {
		t.Fatal(err)
	}
	tx, err := writer.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer rollback(tx)
	args, _ := auditArgs(Row{Kind: KindToolCallStarted, InvocationID: "i", SkillID: "s"})
	if _, err := tx.ExecContext(ctx, insertAudit, args...); err != nil {
		t.Fatal(err)
	}

	rctx, cancel := context.WithTimeout(ctx, time.Second) // far below BusyTimeout
	defer cancel()
	start := time.Now()
	a, err := reader.ActivitySince(rctx, time.Time{}, KindToolCallStarted)
	if err != nil || a.Counts[KindToolCallStarted] != 1 {
		t.Fatalf("during a write: %v, %v; want 1 committed row", a.Counts, err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("read took %s while a writer held the lock", d)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	a, err = reader.ActivitySince(ctx, time.Time{}, KindToolCallStarted)
	if err != nil || a.Counts[KindToolCallStarted] != 2 {
		t.Fatalf("after commit: %v, %v; want 2", a.Counts, err)
	}
}
