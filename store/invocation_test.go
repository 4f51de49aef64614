package store

import (
	"errors"
	"testing"
	"time"
)

func testInvocation(id string, started time.Time) Invocation {
	return Invocation{
		ID: id, SkillID: "report", ContentHash: "h-" + id, Tenant: "default",
		Isolation: "container", SupervisorPID: 4242, SocketPath: "/tmp/cyberos-skill-broker." + id + ".sock",
		StateDir: "/run/skillrun/" + id, StartedAt: started,
	}
}

func TestInvocationLifecycle(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	start := time.Date(2026, 10, 1, 12, 0, 0, 123456789, time.UTC)
	want := testInvocation("inv-1", start)
	if err := s.BeginInvocation(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Invocation(ctx, "inv-1")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Invocation after begin = %+v, want %+v", got, want)
	}
	if got.Finished() {
		t.Error("new invocation is finished")
	}

	sb := Sandbox{Isolation: "container+landlock", ContainerID: "c-1", CgroupPath: "/sys/fs/cgroup/skillrun/inv-1", LandlockABI: 4}
	if err := s.SetSandbox(ctx, "inv-1", sb); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishInvocation(ctx, "inv-1", "success", 0); err != nil {
		t.Fatal(err)
	}
	got, err = s.Invocation(ctx, "inv-1")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Finished() || got.Outcome != "success" || got.ExitCode != 0 {
		t.Errorf("finished invocation = %+v", got)
	}
	if got.ContainerID != sb.ContainerID || got.CgroupPath != sb.CgroupPath || got.LandlockABI != 4 || got.Isolation != sb.Isolation {
		t.Errorf("sandbox not recorded: %+v", got)
	}
	if got.FinishedAt.Before(got.StartedAt) {
		t.Errorf("finished %v before started %v", got.FinishedAt, got.StartedAt)
	}
}

func TestInvocationErrors(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	if err := s.BeginInvocation(ctx, testInvocation("done", time.Time{})); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishInvocation(ctx, "done", "timeout", 124); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginInvocation(ctx, testInvocation("active", time.Time{})); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"begin duplicate", func() error { return s.BeginInvocation(ctx, testInvocation("active", time.Time{})) }, ErrExists},
		{"begin without id", func() error { return s.BeginInvocation(ctx, Invocation{SkillID: "x"}) }, ErrInvalid},
		{"begin without skill", func() error { return s.BeginInvocation(ctx, Invocation{ID: "x"}) }, ErrInvalid},
		{"finish unknown", func() error { return s.FinishInvocation(ctx, "nope", "success", 0) }, ErrNotFound},
		{"finish twice", func() error { return s.FinishInvocation(ctx, "done", "success", 0) }, ErrFinished},
		{"finish empty outcome", func() error { return s.FinishInvocation(ctx, "active", "", 0) }, ErrInvalid},
		{"sandbox unknown", func() error { return s.SetSandbox(ctx, "nope", Sandbox{}) }, ErrNotFound},
		{"sandbox finished", func() error { return s.SetSandbox(ctx, "done", Sandbox{}) }, ErrFinished},
		{"get unknown", func() error { _, err := s.Invocation(ctx, "nope"); return err }, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	// The first outcome stands.
	got, err := s.Invocation(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != "timeout" || got.ExitCode != 124 {
		t.Errorf("outcome overwritten: %+v", got)
	}
}

func TestActiveAndRecentInvocations(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"a", "b", "c", "d"} {
		if err := s.BeginInvocation(ctx, testInvocation(id, base.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishInvocation(ctx, "b", "error", 1); err != nil {
		t.Fatal(err)
	}
	active, err := s.ActiveInvocations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(active); got != "a,c,d" {
		t.Errorf("active = %s, want a,c,d", got)
	}
	tests := []struct {
		limit int
		want  string
	}{
		{2, "d,c"},
		{0, "d,c,b,a"}, // default limit
		{-1, "d,c,b,a"},
		{100, "d,c,b,a"},
	}
	for _, tt := range tests {
		recent, err := s.RecentInvocations(ctx, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(recent); got != tt.want {
			t.Errorf("recent(%d) = %s, want %s", tt.limit, got, tt.want)
		}
	}
}

func ids(invs []Invocation) string {
	var s string
	for i, inv := range invs {
		if i > 0 {
			s += ","
		}
		s += inv.ID
	}
	return s
}
