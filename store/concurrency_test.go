package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
)

// writeAudit writes n rows for invocationID, alternating single inserts
// and small batches, as a broker would.
func writeAudit(ctx context.Context, s *Store, invocationID string, n int) error {
	for i := 0; i < n; {
		if i%10 == 0 && i+5 <= n {
			batch := make([]Row, 5)
			for j := range batch {
				batch[j] = auditRow(invocationID, i+j)
			}
			if err := s.AuditBatch(ctx, batch); err != nil {
				return err
			}
			i += 5
			continue
		}
		if err := s.Audit(ctx, auditRow(invocationID, i)); err != nil {
			return err
		}
		i++
	}
	return nil
}

func auditRow(invocationID string, i int) Row {
	return Row{
		Kind: KindToolCallCompleted, InvocationID: invocationID, SkillID: "s", TraceID: "t",
		Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)),
	}
}

// assertAudit checks that each invocation has exactly n rows, i = 0..n-1 in
// order: none lost, none duplicated, none reordered.
func assertAudit(t *testing.T, s *Store, invocations []string, n int) {
	t.Helper()
	var total int64
	for _, id := range invocations {
		rows, err := s.Rows(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != n {
			t.Errorf("%s: %d rows, want %d", id, len(rows), n)
			continue
		}
		for i, r := range rows {
			var p struct{ I int }
			if err := json.Unmarshal(r.Payload, &p); err != nil || p.I != i {
				t.Errorf("%s: row %d has payload %s", id, i, r.Payload)
				break
			}
		}
		total += int64(len(rows))
	}
	all, err := s.CountSince(t.Context(), "", fromNanos(0))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(invocations) * n); all != want || total != want {
		t.Errorf("total rows %d (per invocation sum %d), want %d", all, total, want)
	}
}

// Eight writers, each with its own Store (own pool, own connections, as
// separate processes would have), 500 rows each, all at once. Each Open
// also races the others' migration of the fresh database.
func TestConcurrentStores(t *testing.T) {
	const writers, perWriter = 8, 500
	dir := t.TempDir()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make(chan error, writers)
		ids   []string
	)
	for w := range writers {
		id := fmt.Sprintf("inv-%d", w)
		ids = append(ids, id)
		wg.Go(func() {
			<-start
			s, err := Open(t.Context(), dir)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			if err := writeAudit(t.Context(), s, id, perWriter); err != nil {
				errs <- fmt.Errorf("writer %s: %w", id, err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assertAudit(t, openDir(t, dir), ids, perWriter)
}

// The environment that makes the test binary a writer process.
const (
	childDirEnv = "SKILLRUN_STORE_TEST_CHILD_DIR"
	childIDEnv  = "SKILLRUN_STORE_TEST_CHILD_ID"
	childNEnv   = "SKILLRUN_STORE_TEST_CHILD_N"
)

// TestChildWriter is the body of a writer process started by
// TestConcurrentProcesses; run directly, it does nothing.
func TestChildWriter(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("helper process, run by TestConcurrentProcesses")
	}
	n, err := strconv.Atoi(os.Getenv(childNEnv))
	if err != nil {
		t.Fatalf("%s: %v", childNEnv, err)
	}
	s := openDir(t, dir)
	if err := writeAudit(t.Context(), s, os.Getenv(childIDEnv), n); err != nil {
		t.Fatal(err)
	}
}

// Real processes: separate SQLite instances sharing the file only through
// POSIX locks and the WAL index, as concurrent `skillrun exec` do.
func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const procs, perProc = 6, 300
	dir := t.TempDir()
	var (
		cmds []*exec.Cmd
		ids  []string
	)
	for p := range procs {
		id := fmt.Sprintf("proc-%d", p)
		ids = append(ids, id)
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChildWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), childDirEnv+"="+dir, childIDEnv+"="+id, fmt.Sprintf("%s=%d", childNEnv, perProc))
		cmds = append(cmds, cmd)
	}
	var wg sync.WaitGroup
	for _, cmd := range cmds {
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("writer process: %v\n%s", err, out)
			}
		})
	}
	wg.Wait()
	assertAudit(t, openDir(t, dir), ids, perProc)
}
