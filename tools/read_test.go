package tools

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrun/skillrun/enforce"
	"github.com/skillrun/skillrun/jsonrpc"
	"github.com/skillrun/skillrun/skill"
)

// realTempDir is t.TempDir with symlinks resolved: the enforcer matches
// real paths, and TMPDIR may be a link.
func realTempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// readPolicy compiles a skill allowed Read on the given x-allowed-files.
func readPolicy(t *testing.T, globs ...string) *enforce.Enforcer {
	t.Helper()
	files, _ := json.Marshal(globs)
	m, diags := skill.Parse("SKILL.md", []byte("---\nname: t\ndescription: d\nallowed-tools: Read\nx-allowed-files: "+string(files)+"\n---\n"))
	for _, d := range diags {
		if d.Severity == skill.SeverityError {
			t.Fatalf("SKILL.md: %s", d)
		}
	}
	reg, err := NewRegistry(Read{})
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := enforce.Compile(skill.NewSnapshot(m, t.TempDir(), "SKILL.md", "hash", nil), reg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// readVia runs a Read the way the broker does: Prepare, then Invoke.
func readVia(t *testing.T, r Read, e *enforce.Enforcer, args string) (*ReadResult, error) {
	t.Helper()
	checked, err := r.Prepare(json.RawMessage(args), e)
	if err != nil {
		return nil, err
	}
	res, err := r.Invoke(t.Context(), Call{Args: checked})
	if err != nil {
		return nil, err
	}
	return res.(*ReadResult), nil
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRead(t *testing.T) {
	dir := realTempDir(t)
	text := []byte("hello, wörld\nsecond line\n")
	binary := []byte{0xff, 0xfe, 0x00, 0x01, 'a'}
	big := []byte(strings.Repeat("0123456789", 10)) // 100 bytes
	writeFile(t, filepath.Join(dir, "text"), text)
	writeFile(t, filepath.Join(dir, "bin"), binary)
	writeFile(t, filepath.Join(dir, "big"), big)
	writeFile(t, filepath.Join(dir, "empty"), nil)
	e := readPolicy(t, dir+"/**")
	small := Read{Max: 30}

	tests := []struct {
		name string
		r    Read
		args string
		want ReadResult
		of   []byte // the whole file, for hash and size
	}{
		{"text", Read{}, `{"path":"` + dir + `/text"}`, ReadResult{Body: string(text)}, text},
		{"binary is base64", Read{}, `{"path":"` + dir + `/bin"}`,
			ReadResult{Body: base64.StdEncoding.EncodeToString(binary), Encoding: "base64"}, binary},
		{"empty", Read{}, `{"path":"` + dir + `/empty"}`, ReadResult{}, nil},
		{"offset and limit", Read{}, `{"path":"` + dir + `/text","offset":7,"limit":6}`, ReadResult{Body: "wörld"}, text},
		{"window cuts a rune", Read{}, `{"path":"` + dir + `/text","offset":8,"limit":1}`,
			ReadResult{Body: base64.StdEncoding.EncodeToString(text[8:9]), Encoding: "base64"}, text},
		{"offset past the end", Read{}, `{"path":"` + dir + `/text","offset":1000}`, ReadResult{}, text},
		{"limit zero: hash and size only", Read{}, `{"path":"` + dir + `/text","limit":0}`, ReadResult{}, text},
		{"over the cap", small, `{"path":"` + dir + `/big"}`, ReadResult{Body: string(big[:30]), Truncated: true}, big},
		{"limit over the cap", small, `{"path":"` + dir + `/big","offset":80,"limit":50}`, ReadResult{Body: string(big[80:])}, big},
		{"limit under the cap", small, `{"path":"` + dir + `/big","limit":10}`, ReadResult{Body: string(big[:10])}, big},
		{"exactly the cap", Read{Max: 100}, `{"path":"` + dir + `/big"}`, ReadResult{Body: string(big)}, big},
		{"unclean path", Read{}, `{"path":"` + dir + `/./sub/../text"}`, ReadResult{Body: string(text)}, text},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readVia(t, tt.r, e, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.ContentHash, tt.want.Size = hashOf(tt.of), int64(len(tt.of))
			if *got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	dir := realTempDir(t)
	secret := realTempDir(t)
	writeFile(t, filepath.Join(dir, "ok"), []byte("ok"))
	writeFile(t, filepath.Join(secret, "shadow"), []byte("root:x"))
	if err := os.Symlink(filepath.Join(secret, "shadow"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := readPolicy(t, dir+"/**")

	tests := []struct {
		name string
		args string
		want error
	}{
		{"missing path", `{}`, jsonrpc.ErrInvalidParams},
		{"absent args", ``, jsonrpc.ErrInvalidParams},
		{"unknown field", `{"path":"` + dir + `/ok","len":3}`, jsonrpc.ErrInvalidParams},
		{"wrong type", `{"path":7}`, jsonrpc.ErrInvalidParams},
		{"negative offset", `{"path":"` + dir + `/ok","offset":-1}`, jsonrpc.ErrInvalidParams},
		{"negative limit", `{"path":"` + dir + `/ok","limit":-1}`, jsonrpc.ErrInvalidParams},
		{"outside the grant", `{"path":"` + secret + `/shadow"}`, enforce.ErrFileViolation},
		{"symlink out of the grant", `{"path":"` + dir + `/link"}`, enforce.ErrFileViolation},
		{"dotdot out of the grant", `{"path":"` + dir + `/../` + filepath.Base(dir) + `x/f"}`, enforce.ErrFileViolation},
		{"relative", `{"path":"ok"}`, enforce.ErrFileViolation},
		{"not found", `{"path":"` + dir + `/nope"}`, fs.ErrNotExist},
		{"directory", `{"path":"` + dir + `/sub"}`, ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readVia(t, Read{}, e, tt.args)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestReadInvokeRefusesSymlink is the use-time check on its own: a path
// that Prepare saw as real but is a link by the time Invoke opens it.
func TestReadInvokeRefusesSymlink(t *testing.T) {
	dir := realTempDir(t)
	secret := filepath.Join(realTempDir(t), "shadow")
	writeFile(t, secret, []byte("root:x"))
	path := filepath.Join(dir, "f")
	writeFile(t, path, []byte("ok"))
	e := readPolicy(t, dir+"/**")
	checked, err := Read{}.Prepare(json.RawMessage(`{"path":"`+path+`"}`), e)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	_, err = Read{}.Invoke(t.Context(), Call{Args: checked})
	d, ok := enforce.AsDenial(err)
	if !ok || d.Reason != enforce.ReasonFileViolation || d.Tool != "Read" {
		t.Fatalf("err = %v, want a Read file_violation denial", err)
	}
}

func TestReadPrepareRewritesPath(t *testing.T) {
	dir := realTempDir(t)
	writeFile(t, filepath.Join(dir, "f"), []byte("x"))
	if err := os.Symlink("f", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	e := readPolicy(t, dir+"/**")
	checked, err := Read{}.Prepare(json.RawMessage(`{"path":"`+dir+`/alias","offset":1}`), e)
	if err != nil {
		t.Fatal(err)
	}
	var got readArgs
	if err := json.Unmarshal(checked, &got); err != nil {
		t.Fatal(err)
	}
	if got.Path != filepath.Join(dir, "f") || got.Offset == nil || *got.Offset != 1 || got.Limit != nil {
		t.Fatalf("prepared %s, want the real path and the same window", checked)
	}
}

func TestReadCancelled(t *testing.T) {
	dir := realTempDir(t)
	writeFile(t, filepath.Join(dir, "f"), []byte("x"))
	e := readPolicy(t, dir+"/**")
	checked, err := Read{}.Prepare(json.RawMessage(`{"path":"`+dir+`/f"}`), e)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := (Read{}).Invoke(ctx, Call{Args: checked}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestReadResultTruncate checks the result shrinks to fit the response
// cap, whatever JSON escaping does to its size.
func TestReadResultTruncate(t *testing.T) {
	tests := []struct {
		name string
		res  ReadResult
	}{
		{"escaped text", ReadResult{Body: strings.Repeat("<\x01\"é\u2028", 2000)}},
		{"plain text", ReadResult{Body: strings.Repeat("a", 10000)}},
		{"base64", ReadResult{Body: base64.StdEncoding.EncodeToString(make([]byte, 9000)), Encoding: "base64"}},
	}
	for _, tt := range tests {
		for _, room := range []int{0, 50, 150, 1001, 4096} {
			tt.res.ContentHash, tt.res.Size = strings.Repeat("a", 64), 12345
			small := tt.res.Truncate(room).(*ReadResult)
			b, err := json.Marshal(small)
			if err != nil {
				t.Fatal(err)
			}
			if room >= 150 && len(b) > room {
				t.Errorf("%s: Truncate(%d) marshals to %d bytes", tt.name, room, len(b))
			}
			if !small.Truncated || small.ContentHash != tt.res.ContentHash || !strings.HasPrefix(tt.res.Body, small.Body) {
				t.Errorf("%s: Truncate(%d) = %+v, want a truncated prefix with the same hash", tt.name, room, small)
			}
			if room == 4096 && len(b) < room-6 {
				t.Errorf("%s: Truncate(%d) uses only %d bytes", tt.name, room, len(b))
			}
			if small.Encoding == "base64" && len(small.Body)%4 != 0 {
				t.Errorf("%s: base64 cut inside a quantum: %d", tt.name, len(small.Body))
			}
		}
	}
}

func TestReadSpecIsNative(t *testing.T) {
	s := Read{}.Spec()
	if s.Name != "Read" || len(s.Capabilities) != 1 || s.Capabilities[0] != enforce.CapFileRead {
		t.Fatalf("Spec = %+v", s)
	}
}
