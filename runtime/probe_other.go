//go:build !linux

package runtime

import (
	"context"
	goruntime "runtime"

	"github.com/skillrun/skillrun/enforce"
)

// probe reports a host without any Linux isolation feature. Probe adds the
// one Problems line (from isolationFor) saying the platform lacks them.
func probe(context.Context, bool) enforce.Host {
	return enforce.Host{OS: goruntime.GOOS}
}
