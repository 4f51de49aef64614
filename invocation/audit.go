package invocation

import (
	"context"
	"log/slog"

	"github.com/skillrun/skillrun/store"
)

// storeAuditor writes the broker's tool-call rows to the state store. A
// failed write is logged and the call still completes (DESIGN §7); queueing
// and counting lost rows comes with the audit work.
type storeAuditor struct {
	st           *store.Store
	invocationID string
	skillID      string
	log          *slog.Logger
}

func (a storeAuditor) Record(ctx context.Context, kind string, payload map[string]any) {
	trace, _ := payload["trace_id"].(string)
	row := store.Row{Kind: kind, InvocationID: a.invocationID, SkillID: a.skillID, TraceID: trace, Payload: mustJSON(payload)}
	if err := a.st.Audit(context.WithoutCancel(ctx), row); err != nil {
		a.log.Warn("audit row lost", "kind", kind, "invocation", a.invocationID, "err", err)
	}
}
