package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/tools"
)

// TestReadSymlinkSwapRace is the check-then-use attack through the whole
// broker: a path in the grant flips, atomically and continuously, between
// an allowed file and a symlink to a secret (standing in for /etc/shadow)
// while the skill asks to Read it 10,000 times over the socket. Every call
// must return the allowed content or a file_violation (or not found);
// the secret's bytes never.
func TestReadSymlinkSwapRace(t *testing.T) {
	const iterations = 10000
	f := start(t)
	allowed, secret := "allowed content", "root:$6$SECRET-HASH:19000:0:99999:7:::"
	path := f.write(t, "shadow", allowed)
	secretPath := filepath.Join(realTempDir(t), "shadow")
	if err := os.WriteFile(secretPath, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(f.dir, "shadowlink")
	if err := os.Symlink(secretPath, link); err != nil {
		t.Fatal(err)
	}
	stop := swap(t, path, link)
	defer stop()

	var ok, denied, missing int
	args := map[string]string{"path": path}
	for range iterations {
		var got tools.ReadResult
		err := f.client.CallTool(t.Context(), "Read", args, "", &got)
		te, isToolErr := broker.AsToolError(err)
		switch {
		case err == nil:
			if strings.Contains(got.Body, "SECRET") || got.Body != allowed {
				t.Fatalf("body = %q: the secret leaked", got.Body)
			}
			ok++
		case errors.Is(err, enforce.ErrFileViolation):
			denied++
		case isToolErr && te.Reason == broker.ReasonNotFound:
			missing++
		default:
			t.Fatalf("err = %v, want success, file_violation or not_found", err)
		}
	}
	stop()
	t.Logf("%d allowed, %d denied (%d of them at open, after the check passed), %d not found", ok, denied, deniedAtOpen(f.audit.take()), missing)
	if ok == 0 || denied == 0 {
		t.Fatalf("the swap did not race the reads: %d allowed, %d denied", ok, denied)
	}
	if st := f.broker.Stats(); st.Denied != int64(denied) {
		t.Fatalf("stats denied = %d, want %d", st.Denied, denied)
	}
}

// deniedAtOpen counts denials that came after tool_call_started: the
// path passed the check and the open refused the link swapped in since.
func deniedAtOpen(rows []row) int {
	n := 0
	for i := 1; i < len(rows); i++ {
		if rows[i].kind == broker.KindToolDenied && rows[i-1].kind == broker.KindToolCallStarted {
			n++
		}
	}
	return n
}

// swap exchanges a and b with RENAME_EXCHANGE until the returned func is
// called: one of them is always at either name, so the path never dangles.
func swap(t *testing.T, a, b string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}
