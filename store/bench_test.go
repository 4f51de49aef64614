package store

import (
	"encoding/json"
	"fmt"
	"testing"
)

var benchPayload = json.RawMessage(`{"tool":"Read","outcome":"success","duration_ms":3,"args_hash":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","args_size_bytes":42,"result_size_bytes":1024}`)

func benchRow() Row {
	return Row{Kind: KindToolCallCompleted, InvocationID: "bench", SkillID: "report", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Payload: benchPayload}
}

// BenchmarkAudit: one row per transaction, the broker's per-call write.
func BenchmarkAudit(b *testing.B) {
	s := openTest(b)
	r := benchRow()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Audit(b.Context(), r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuditBatch: 100 rows per transaction, the queued-rows flush.
// ns/op is per batch; ns/row is reported alongside.
func BenchmarkAuditBatch(b *testing.B) {
	const batchSize = 100
	s := openTest(b)
	batch := make([]Row, batchSize)
	for i := range batch {
		batch[i] = benchRow()
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.AuditBatch(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchSize), "ns/row")
}

// brokerPayload is a skill.tool_call_completed row as the broker writes it:
// it has the ids already, so json_insert is skipped.
var brokerPayload = json.RawMessage(`{"args_hash":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","args_size_bytes":42,"call_id":"00f067aa0ba902b7","duration_ms":0,"invocation_id":"bench","outcome":"success","result_size_bytes":166,"skill_id":"report","tenant_id":"default","tool_name":"Read","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`)

// BenchmarkAuditBatchSizes: the audit queue's flushes, from the two rows of
// one tool call to a backlog, of rows as the broker writes them. ns/row is
// the cost of a row written in a batch of that size, the transaction's
// share included.
func BenchmarkAuditBatchSizes(b *testing.B) {
	for _, size := range []int{2, 8, 64, 512} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			s := openTest(b)
			batch := make([]Row, size)
			for i := range batch {
				batch[i] = benchRow()
				batch[i].Payload = brokerPayload
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := s.AuditBatch(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/row")
		})
	}
}
