package broker_test

import (
	"errors"
	"testing"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/enforce"
)

// x-rate-limit: 10 calls per minute declared, 15 made: 5 rate_limited
// denials, each audited, and the 10 others dispatched.
func TestRateLimit(t *testing.T) {
	fm := "---\nname: t\ndescription: d\nallowed-tools: Echo\nx-rate-limit: 10\n---\n"
	snap, e := compile(t, fm, echo{}.Spec())
	audit := &recorder{}
	b, err := broker.New(broker.Config{Snapshot: snap, Enforcer: e, Registry: registry(t, echo{}), InvocationID: "inv-rl", Audit: audit})
	if err != nil {
		t.Fatal(err)
	}
	sock := t.TempDir() + "/b.sock"
	l, err := broker.Listen(sock, broker.KeepOwner)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, b, l)
	client := dial(t, sock)
	limited := 0
	for i := 0; i < 15; i++ {
		var got echoResult
		err := client.CallTool(t.Context(), "Echo", map[string]string{}, "", &got)
		switch {
		case err == nil:
		case errors.Is(err, enforce.ErrRateLimited):
			limited++
		default:
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if limited != 5 {
		t.Fatalf("%d calls rate limited, want 5", limited)
	}
	denied, started := 0, 0
	for _, r := range audit.take() {
		switch r.kind {
		case broker.KindToolDenied:
			if r.payload["reason"] == string(enforce.ReasonRateLimited) {
				denied++
			}
		case broker.KindToolCallStarted:
			started++
		}
	}
	if denied != 5 || started != 10 {
		t.Fatalf("audit: %d rate_limited denials, %d started; want 5 and 10", denied, started)
	}
}
