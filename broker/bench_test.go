package broker_test

import (
	"testing"

	"github.com/skillrun/skillrun/tools"
)

// BenchmarkToolCallRead is one Read of a small file, round trip over the
// socket: framing, checks (resolve, glob, open without symlinks), hashing.
func BenchmarkToolCallRead(b *testing.B) {
	f := start(b)
	p := f.write(b, "small.txt", "a small file of a few bytes\n")
	args := map[string]string{"path": p}
	b.ReportAllocs()
	for b.Loop() {
		var got tools.ReadResult
		if err := f.client.CallTool(b.Context(), "Read", args, "", &got); err != nil {
			b.Fatal(err)
		}
	}
}
