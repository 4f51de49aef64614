// Package jsonrpc is the broker's wire protocol: JSON-RPC 2.0 messages, each
// framed as a 4-byte big-endian length followed by that many bytes of JSON,
// served over a Unix socket. It holds the framing with its size caps, the
// message types and their validation, the one table that maps JSON-RPC
// errors to Go errors and back (so a client sees errors.Is(err,
// enforce.ErrScopeViolation) for a scope denial), a sequential per-connection
// server loop and a small client.
package jsonrpc
