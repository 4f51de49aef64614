package store

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestAuditRoundTrip(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	ts := time.Date(2026, 10, 1, 12, 0, 0, 1, time.UTC)
	in := []Row{
		{TS: ts, Kind: KindInvokedStarted, InvocationID: "i1", SkillID: "report", TraceID: "t1"},
		{TS: ts, Kind: KindToolCallStarted, InvocationID: "i1", SkillID: "report", TraceID: "t1",
			Payload: json.RawMessage(`{"tool":"Read","args_hash":"ab"}`)},
		// The payload's own trace_id is kept as written.
		{TS: ts, Kind: KindToolDenied, InvocationID: "i1", SkillID: "report", TraceID: "t1",
			Payload: json.RawMessage(` {"reason":"scope_violation","trace_id":"inner"} `)},
		{TS: ts, Kind: KindInvokedStarted, InvocationID: "i2", SkillID: "other", TraceID: "t2"},
	}
	for _, r := range in {
		if err := s.Audit(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.Rows(ctx, "i1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(rows))
	}
	wantPayloads := []map[string]string{
		{"invocation_id": "i1", "skill_id": "report", "trace_id": "t1"},
		{"tool": "Read", "args_hash": "ab", "invocation_id": "i1", "skill_id": "report", "trace_id": "t1"},
		{"reason": "scope_violation", "trace_id": "inner", "invocation_id": "i1", "skill_id": "report"},
	}
	for i, r := range rows {
		if i > 0 && r.Seq <= rows[i-1].Seq {
			t.Errorf("seq not increasing: %d after %d", r.Seq, rows[i-1].Seq)
		}
		if !r.TS.Equal(ts) || r.Kind != in[i].Kind || r.TraceID != "t1" || r.SkillID != "report" {
			t.Errorf("row %d = %+v", i, r)
		}
		var got map[string]string
		if err := json.Unmarshal(r.Payload, &got); err != nil {
			t.Fatalf("row %d payload %s: %v", i, r.Payload, err)
		}
		if !equalMaps(got, wantPayloads[i]) {
			t.Errorf("row %d payload = %v, want %v", i, got, wantPayloads[i])
		}
	}

	// payload.trace_id is queryable in SQL.
	var n int
	err = s.db.QueryRowContext(ctx, `SELECT count(*) FROM audit WHERE payload ->> '$.trace_id' = 't2'`).Scan(&n)
	if err != nil || n != 1 {
		t.Errorf("rows with payload.trace_id t2 = %d, %v; want 1", n, err)
	}

	since, err := s.RowsSince(ctx, "i1", rows[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if len(since) != 2 || since[0].Seq != rows[1].Seq {
		t.Errorf("RowsSince = %+v", since)
	}
	none, err := s.Rows(ctx, "unknown")
	if err != nil || len(none) != 0 {
		t.Errorf("Rows(unknown) = %v, %v", none, err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func TestAuditInvalid(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	tests := []struct {
		name string
		row  Row
	}{
		{"unknown kind", Row{Kind: "skill.typo"}},
		{"empty kind", Row{}},
		{"array payload", Row{Kind: KindTimeout, Payload: json.RawMessage(`[1]`)}},
		{"string payload", Row{Kind: KindTimeout, Payload: json.RawMessage(`"x"`)}},
		{"broken payload", Row{Kind: KindTimeout, Payload: json.RawMessage(`{"a":`)}},
		{"trailing garbage", Row{Kind: KindTimeout, Payload: json.RawMessage(`{} {}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Audit(ctx, tt.row); !errors.Is(err, ErrInvalid) {
				t.Errorf("Audit = %v, want ErrInvalid", err)
			}
			// One bad row fails the whole batch, and nothing is written.
			batch := []Row{{Kind: KindTimeout, InvocationID: "b"}, tt.row}
			if err := s.AuditBatch(ctx, batch); !errors.Is(err, ErrInvalid) {
				t.Errorf("AuditBatch = %v, want ErrInvalid", err)
			}
		})
	}
	if n, err := s.CountSince(ctx, "", time.Time{}); err != nil || n != 0 {
		t.Errorf("rows written by failed calls: %d, %v", n, err)
	}
}

func TestAuditBatchAndCount(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	day := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var batch []Row
	for i := range 10 {
		kind := KindToolCallCompleted
		if i%3 == 0 {
			kind = KindToolDenied
		}
		// Half of the rows are from the day before.
		ts := day.Add(time.Duration(i-5) * time.Hour)
		batch = append(batch, Row{TS: ts, Kind: kind, InvocationID: "i"})
	}
	if err := s.AuditBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.AuditBatch(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind  string
		since time.Time
		want  int64
	}{
		{KindToolDenied, time.Time{}, 4},  // i = 0, 3, 6, 9
		{KindToolDenied, day, 2},          // i = 6, 9
		{KindToolCallCompleted, day, 3},   // i = 5, 7, 8
		{"", day, 5},                      // every kind
		{KindTimeout, time.Time{}, 0},     // none
		{"", day.Add(5 * time.Hour), 0},   // after the last
		{"", day.Add(-5 * time.Hour), 10}, // inclusive bound
	}
	for _, tt := range tests {
		n, err := s.CountSince(ctx, tt.kind, tt.since)
		if err != nil {
			t.Fatal(err)
		}
		if n != tt.want {
			t.Errorf("CountSince(%q, %v) = %d, want %d", tt.kind, tt.since, n, tt.want)
		}
	}
	rows, err := s.Rows(ctx, "i")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Fatalf("batch wrote %d rows, want 10", len(rows))
	}
	for i, r := range rows {
		if !r.TS.Equal(batch[i].TS) {
			t.Errorf("row %d ts %v, want %v (seq order = write order)", i, r.TS, batch[i].TS)
		}
	}
}
