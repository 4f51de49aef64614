package broker

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/skillrun/skillrun/enforce"
)

// newRateLimiter returns the limiter of x-rate-limit (tool calls per
// minute), or nil when the skill declared none: default unbounded. A full
// bucket of one minute's calls lets a skill burst its whole allowance, then
// refills at the declared pace.
func newRateLimiter(perMinute int) *rate.Limiter {
	if perMinute <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Every(time.Minute/time.Duration(perMinute)), perMinute)
}

// checkRate is the third check of a call, after the tool and its
// arguments passed (DESIGN §6): every call over the limit is a denial.
func (b *Broker) checkRate(tool string) error {
	if b.limiter == nil || b.limiter.Allow() {
		return nil
	}
	return enforce.Deny(enforce.ReasonRateLimited, tool, "over x-rate-limit of %d calls per minute", b.limiter.Burst())
}
