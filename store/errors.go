package store

import "errors"

// Sentinels of the store. Every returned error wraps one of these (or a
// driver error) with the operation and the key it was about, e.g.
// "finish invocation 7f3c…: store: not found".
var (
	// ErrNotFound: no row with that key.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: a row with that key already exists and the operation
	// would not overwrite it.
	ErrExists = errors.New("store: already exists")
	// ErrFinished: the invocation is already finished; its record is final.
	ErrFinished = errors.New("store: invocation already finished")
	// ErrDecided: the approval already has a verdict; verdicts are final.
	ErrDecided = errors.New("store: approval already decided")
	// ErrInvalid: an argument the store cannot record (empty key, a payload
	// that is not a JSON object, an unknown verdict).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrSchemaTooNew: the database was migrated by a newer skillrun; this
	// binary refuses to touch it rather than misread it.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this skillrun")
	// ErrUnsafeDir: the state dir (or its database) is writable by group or
	// others, or owned by another user, so its contents cannot be trusted.
	ErrUnsafeDir = errors.New("store: unsafe state dir")
)
