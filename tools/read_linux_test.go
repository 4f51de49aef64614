package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/enforce"
)

// raceIterations is how many Reads each race runs against the swapper.
const raceIterations = 10000

// swapRace is the check-then-use attack on Read: a path flips between an
// allowed regular file (or directory) and a symlink to a secret while
// Reads of it go through Prepare (the check) and Invoke (the open). The
// secret's bytes must never come back.
type swapRace struct {
	Allowed, Secret []byte
	// Path is what the skill asks to read; Real and Link are swapped
	// atomically with RENAME_EXCHANGE, one of them always at Path.
	Path, Real, Link string
}

// newSwapRace builds the attack in fresh temp dirs. With dirLevel, the
// swapped component is a directory above the file rather than the file.
func newSwapRace(t testing.TB, dir, secretDir string, dirLevel bool) *swapRace {
	t.Helper()
	r := &swapRace{Allowed: []byte("allowed content"), Secret: []byte("root:$6$SECRET:19000:0:99999:7:::")}
	if dirLevel {
		for _, p := range []string{filepath.Join(dir, "sub"), filepath.Join(secretDir, "etc")} {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		writeTB(t, filepath.Join(dir, "sub", "shadow"), r.Allowed)
		writeTB(t, filepath.Join(secretDir, "etc", "shadow"), r.Secret)
		r.Path, r.Real, r.Link = filepath.Join(dir, "sub", "shadow"), filepath.Join(dir, "sub"), filepath.Join(dir, "sublink")
		if err := os.Symlink(filepath.Join(secretDir, "etc"), r.Link); err != nil {
			t.Fatal(err)
		}
		return r
	}
	writeTB(t, filepath.Join(dir, "shadow"), r.Allowed)
	writeTB(t, filepath.Join(secretDir, "shadow"), r.Secret)
	r.Path, r.Real, r.Link = filepath.Join(dir, "shadow"), filepath.Join(dir, "shadow"), filepath.Join(dir, "shadowlink")
	if err := os.Symlink(filepath.Join(secretDir, "shadow"), r.Link); err != nil {
		t.Fatal(err)
	}
	return r
}

// Swap flips Real and Link in a goroutine until the returned func, which
// stops it and waits for it, is called.
func (r *swapRace) Swap(t testing.TB) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if err := unix.Renameat2(unix.AT_FDCWD, r.Real, unix.AT_FDCWD, r.Link, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// outcomes counts how Reads in a race ended.
type outcomes struct {
	Allowed, DeniedAtCheck, DeniedAtOpen, NotFound int
}

func writeTB(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadSymlinkSwapRace(t *testing.T) {
	for _, o := range openers {
		for _, dirLevel := range []bool{false, true} {
			name := o.name + "/file"
			if dirLevel {
				name = o.name + "/directory"
			}
			t.Run(name, func(t *testing.T) {
				useWalk(t, o.walk)
				dir, secretDir := realTempDir(t), realTempDir(t)
				race := newSwapRace(t, dir, secretDir, dirLevel)
				e := readPolicy(t, dir+"/**")
				stop := race.Swap(t)
				defer stop()
				var out outcomes
				for range raceIterations {
					raceOnce(t, race, e, &out)
				}
				stop()
				t.Logf("%+v", out)
				if out.Allowed == 0 || out.DeniedAtCheck+out.DeniedAtOpen == 0 {
					t.Fatalf("the swap did not race the reads: %+v", out)
				}
			})
		}
	}
}

func raceOnce(t *testing.T, race *swapRace, e *enforce.Enforcer, out *outcomes) {
	args, _ := json.Marshal(map[string]string{"path": race.Path})
	checked, err := Read{}.Prepare(args, e)
	if err != nil {
		if !errors.Is(err, enforce.ErrFileViolation) {
			t.Fatalf("Prepare: %v, want success or file_violation", err)
		}
		out.DeniedAtCheck++
		return
	}
	res, err := Read{}.Invoke(t.Context(), Call{Args: checked})
	switch {
	case errors.Is(err, enforce.ErrFileViolation):
		out.DeniedAtOpen++
	case errors.Is(err, fs.ErrNotExist):
		out.NotFound++
	case err != nil:
		t.Fatalf("Invoke: %v, want success, file_violation or not found", err)
	default:
		body := res.(*ReadResult).Body
		if bytes.Contains([]byte(body), race.Secret[:10]) {
			t.Fatalf("the secret leaked: %q", body)
		}
		if body != string(race.Allowed) {
			t.Fatalf("body = %q, want %q", body, race.Allowed)
		}
		out.Allowed++
	}
}
