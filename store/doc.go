// Package store is skillrun's embedded state: one SQLite database (WAL) in
// the state dir holding invocations, audit rows, trust pins, quarantine,
// the tenant-partitioned memory store with full-text search, and approval
// verdicts. Many `skillrun exec` processes open it at once; every write
// transaction takes the write lock up front (BEGIN IMMEDIATE) and waits
// under busy_timeout, so normal contention never surfaces as SQLITE_BUSY.
//
// All timestamps are stored as INTEGER unix nanoseconds (UTC), which sort
// numerically and compare without parsing.
package store
