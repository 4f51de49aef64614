package invocation

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillrun/skillrun/broker"
	"github.com/skillrun/skillrun/store"
)

// The broker hands its rows over already encoded.
var _ broker.RawAuditor = (*auditWriter)(nil)

// Limits of the audit queue.
const (
	// auditQueueMax bounds the rows held while the store is unavailable:
	// some tens of MiB of typical rows, minutes of a busy skill's calls.
	auditQueueMax = 1 << 16
	// auditBatchMax rows go in one transaction: one fsync for many rows,
	// and a write lock held for milliseconds, not longer.
	auditBatchMax = 512
	// auditFlushTimeout bounds how long the end of an invocation waits for
	// queued rows. It is exceeded by at most one batch attempt, which the
	// store's busy timeout bounds.
	auditFlushTimeout = 10 * time.Second
	// auditLinger is how long the writer lets rows gather before it takes
	// a batch: a busy skill's rows then share one transaction, whose
	// commit costs more than many rows do, instead of each call's rows
	// taking one of their own. A row waits this long at most before its
	// write starts; Close does not wait for it.
	auditLinger   = 2 * time.Millisecond
	auditRetryMin = 50 * time.Millisecond
	auditRetryMax = 2 * time.Second
)

// auditWriter is how an invocation's rows reach the store once the
// invocation has begun: the broker's tool-call rows (it is the broker's
// Auditor) and the invocation's own. Record queues a row and returns, so a
// locked or broken store never holds up a tool call (DESIGN §7); one
// goroutine writes the queue in order, in batches, retrying with backoff
// while the store fails. Rows keep the time they were recorded, and their
// seq follows the order they were recorded in.
//
// A row is either written or lost, and both are counted: lost are rows
// dropped because the queue was full, refused by the store as invalid,
// still unwritten when Close's deadline passed, or recorded after Close.
type auditWriter struct {
	st           *store.Store
	log          *slog.Logger
	invocationID string
	skillID      string
	traceID      string // for rows whose payload names no trace_id
	max          int

	mu      sync.Mutex
	queue   []store.Row
	closing bool // Close was called: drain, then stop
	closed  bool // the goroutine is done: rows now are lost
	full    bool // a drop for a full queue has been logged

	// ctx bounds every write; Close's deadline cancels it, even in the
	// middle of a write waiting for another process's lock.
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // a row was queued
	stop   chan struct{} // closed by Close
	done   chan struct{} // closed when the goroutine returns

	written, lost atomic.Int64
}

// newAuditWriter returns a writer that queues up to max rows (0: the
// default). It writes nothing until start.
func newAuditWriter(st *store.Store, log *slog.Logger, invocationID, skillID, traceID string, max int) *auditWriter {
	if max <= 0 {
		max = auditQueueMax
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &auditWriter{
		st: st, log: log, invocationID: invocationID, skillID: skillID, traceID: traceID, max: max,
		ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

func (w *auditWriter) start() { go w.run() }

// Record queues one row; it never waits for the store. The payload's
// trace_id, if any, is also the row's trace column.
func (w *auditWriter) Record(_ context.Context, kind string, payload map[string]any) {
	if payload == nil {
		payload = map[string]any{} // a JSON object, as the store requires
	}
	trace, _ := payload["trace_id"].(string)
	w.enqueue(kind, trace, mustJSON(payload))
}

// RecordJSON is Record of a payload the broker has encoded itself (it is a
// broker.RawAuditor); trace is the payload's trace_id.
func (w *auditWriter) RecordJSON(_ context.Context, kind, trace string, payload []byte) {
	w.enqueue(kind, trace, payload)
}

// enqueue queues one row; it never waits for the store.
func (w *auditWriter) enqueue(kind, trace string, payload []byte) {
	if trace == "" {
		trace = w.traceID
	}
	row := store.Row{TS: time.Now(), Kind: kind, InvocationID: w.invocationID, SkillID: w.skillID, TraceID: trace, Payload: payload}
	w.mu.Lock()
	switch {
	case w.closed:
		w.mu.Unlock()
		w.lose(1, "recorded after the audit queue was closed", kind)
		return
	case len(w.queue) >= w.max:
		logIt := !w.full
		w.full = true
		w.mu.Unlock()
		w.lost.Add(1)
		if logIt {
			w.log.Error("audit queue full: dropping rows until the store catches up", "invocation", w.invocationID, "queued", w.max)
		}
		return
	}
	w.queue = append(w.queue, row)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Written is the number of rows written so far.
func (w *auditWriter) Written() int64 { return w.written.Load() }

// Lost is the number of rows lost so far; final once Close has returned
// (later Records add to it, and are logged).
func (w *auditWriter) Lost() int64 { return w.lost.Load() }

// Close writes what is queued, giving up when ctx is done, and stops the
// writer. Rows not written by then are counted lost.
func (w *auditWriter) Close(ctx context.Context) {
	w.mu.Lock()
	first := !w.closing
	w.closing = true
	w.mu.Unlock()
	if first {
		defer context.AfterFunc(ctx, w.cancel)()
		close(w.stop)
	}
	<-w.done
	w.cancel()
	if n := w.Lost(); n > 0 {
		w.log.Error("audit rows lost", "invocation", w.invocationID, "lost", n, "written", w.Written())
	}
}

func (w *auditWriter) run() {
	defer close(w.done)
	failing := false // in an outage: log its start and end once
	linger := time.NewTimer(auditLinger)
	defer linger.Stop()
	for {
		w.gather(linger)
		batch, last := w.next()
		if last {
			return
		}
		if batch == nil {
			select {
			case <-w.wake:
			case <-w.stop:
			}
			continue
		}
		if !w.write(batch, &failing) {
			w.loseQueue()
			return
		}
	}
}

// gather lets rows queue for auditLinger, unless Close was called: then
// the queue is drained at once.
func (w *auditWriter) gather(t *time.Timer) {
	select {
	case <-w.stop:
		return
	default:
	}
	t.Reset(auditLinger)
	select {
	case <-t.C:
	case <-w.stop:
	}
}

// next takes the next batch off the queue. last means the queue is empty
// and Close was called: the writer is done, and says so under the lock, so
// a row recorded from now on is counted lost rather than left queued.
func (w *auditWriter) next() (batch []store.Row, last bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.queue = nil // let a drained backlog's array go
		if w.closing {
			w.closed = true
			return nil, true
		}
		return nil, false
	}
	n := min(len(w.queue), auditBatchMax)
	batch = make([]store.Row, n)
	copy(batch, w.queue)
	w.queue = w.queue[n:]
	w.full = false
	return batch, false
}

// write writes rows in one transaction, retrying while the store fails.
// It returns false when the flush deadline passed first; rows is then
// counted lost. A batch the store refuses as invalid is written row by row,
// so one bad row costs only itself.
func (w *auditWriter) write(rows []store.Row, failing *bool) bool {
	delay := auditRetryMin
	for {
		err := w.st.AuditBatch(w.ctx, rows)
		if err != nil && w.ctx.Err() != nil {
			w.lose(int64(len(rows)), "flush deadline passed", rows[0].Kind)
			return false
		}
		switch {
		case err == nil:
			w.written.Add(int64(len(rows)))
			if *failing {
				*failing = false
				w.log.Info("audit store writable again; queued rows written", "invocation", w.invocationID)
			}
			return true
		case errors.Is(err, store.ErrInvalid) && len(rows) > 1:
			for i := range rows {
				if !w.write(rows[i:i+1], failing) {
					w.lose(int64(len(rows)-i-1), "flush deadline passed", rows[0].Kind)
					return false
				}
			}
			return true
		case errors.Is(err, store.ErrInvalid):
			w.lose(1, err.Error(), rows[0].Kind)
			return true
		}
		if !*failing {
			*failing = true
			w.log.Warn("audit store unavailable; rows stay queued and are retried", "invocation", w.invocationID, "err", err)
		}
		if !w.sleep(delay) {
			w.lose(int64(len(rows)), "flush deadline passed", rows[0].Kind)
			return false
		}
		delay = min(2*delay, auditRetryMax)
	}
}

// sleep waits d before a retry; false if the flush deadline passes first.
func (w *auditWriter) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// loseQueue counts what is still queued as lost and closes the writer.
func (w *auditWriter) loseQueue() {
	w.mu.Lock()
	n := len(w.queue)
	w.queue, w.closed = nil, true
	w.mu.Unlock()
	if n > 0 {
		w.lose(int64(n), "flush deadline passed", "")
	}
}

func (w *auditWriter) lose(n int64, why, kind string) {
	w.lost.Add(n)
	w.log.Error("audit rows lost", "invocation", w.invocationID, "rows", n, "kind", kind, "why", why)
}
