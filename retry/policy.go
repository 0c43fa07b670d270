// Package retry holds retry policies: exponential backoff with jitter, built on
// github.com/cenkalti/backoff/v4, and delay tiers for broker-side retries.
package retry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Defaults applied to zero fields of Policy.
const (
	MaxAttemptsDefault     = 5
	InitialIntervalDefault = time.Second
	MaxIntervalDefault     = 5 * time.Minute
	MultiplierDefault      = 2.0
	JitterDefault          = 0.2
)

// Policy computes the delay before each retry: InitialInterval × Multiplier^(n-1),
// capped at MaxInterval, then spread uniformly by ±Jitter. The zero Policy is
// valid and uses the defaults above.
type Policy struct {
	// MaxAttempts is the total number of attempts, the first included. When an
	// attempt fails and Attempt >= MaxAttempts the message is dead-lettered
	// with reason "exhausted". Defaults to MaxAttemptsDefault (5).
	MaxAttempts int

	// InitialInterval is the delay after the first failed attempt, before
	// jitter. Defaults to InitialIntervalDefault (1s).
	InitialInterval time.Duration

	// MaxInterval caps the delay before jitter. Defaults to MaxIntervalDefault
	// (5m).
	MaxInterval time.Duration

	// Multiplier grows the delay per attempt; must be >= 1. Defaults to
	// MultiplierDefault (2).
	Multiplier float64

	// Jitter is the randomization factor in [0, 1): a delay d becomes a uniform
	// value in [d×(1-Jitter), d×(1+Jitter)]. Defaults to JitterDefault (0.2);
	// set NoJitter for none.
	Jitter float64
}

// NoJitter, as Policy.Jitter, disables jitter (the zero value means the default).
const NoJitter = -1.0

// WithDefaults returns p with zero fields replaced by the defaults. It is
// idempotent: NoJitter stays NoJitter.
func (p Policy) WithDefaults() Policy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = MaxAttemptsDefault
	}
	if p.InitialInterval == 0 {
		p.InitialInterval = InitialIntervalDefault
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = max(MaxIntervalDefault, p.InitialInterval)
	}
	if p.Multiplier == 0 {
		p.Multiplier = MultiplierDefault
	}
	if p.Jitter == 0 {
		p.Jitter = JitterDefault
	}
	return p
}

// jitter is the effective randomization factor: 0 for NoJitter.
func (p Policy) jitter() float64 {
	if p.Jitter == NoJitter {
		return 0
	}
	return p.Jitter
}

// Validate reports every invalid field of p, after defaults are applied, as
// one error (errors.Join).
func (p Policy) Validate() error {
	p = p.WithDefaults()
	var errs []error
	if p.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("retry: MaxAttempts must be >= 1, got %d", p.MaxAttempts))
	}
	if p.InitialInterval < 0 {
		errs = append(errs, fmt.Errorf("retry: InitialInterval must be > 0 (0 means the default), got %s", p.InitialInterval))
	}
	if p.MaxInterval < p.InitialInterval {
		errs = append(errs, fmt.Errorf("retry: MaxInterval %s is below InitialInterval %s", p.MaxInterval, p.InitialInterval))
	}
	if p.Multiplier < 1 {
		errs = append(errs, fmt.Errorf("retry: Multiplier must be >= 1, got %g", p.Multiplier))
	}
	if p.Jitter != NoJitter && (p.Jitter < 0 || p.Jitter >= 1) {
		errs = append(errs, fmt.Errorf("retry: Jitter must be in [0, 1) or NoJitter, got %g", p.Jitter))
	}
	return errors.Join(errs...)
}

// BaseDelay returns the delay after failed attempt n (n >= 1) before jitter.
func (p Policy) BaseDelay(n int) time.Duration {
	p = p.WithDefaults()
	b := &backoff.ExponentialBackOff{
		InitialInterval:     p.InitialInterval,
		RandomizationFactor: 0,
		Multiplier:          p.Multiplier,
		MaxInterval:         p.MaxInterval,
		MaxElapsedTime:      0,
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	b.Reset()
	d := b.NextBackOff()
	for i := 1; i < n && d < p.MaxInterval; i++ {
		d = b.NextBackOff()
	}
	return d
}

// Delay returns the jittered delay after failed attempt n (n >= 1), drawing
// from rnd. The same rnd state gives the same delay. A nil rnd uses the
// process-wide source.
func (p Policy) Delay(n int, rnd *rand.Rand) time.Duration {
	p = p.WithDefaults()
	d := p.BaseDelay(n)
	j := p.jitter()
	if j == 0 {
		return d
	}
	f := 0.0
	if rnd != nil {
		f = rnd.Float64()
	} else {
		f = rand.Float64()
	}
	lo := float64(d) * (1 - j)
	hi := float64(d) * (1 + j)
	return time.Duration(lo + f*(hi-lo))
}

// Exhausted reports whether a failure of attempt n leaves no attempts.
func (p Policy) Exhausted(n int) bool { return n >= p.WithDefaults().MaxAttempts }

// LongestDelay is an upper bound of every delay the policy produces:
// MaxInterval plus jitter, whatever MaxAttempts is. Use it for checks such as
// "claim retention must exceed the longest retry" and a broker's delay limit.
func (p Policy) LongestDelay() time.Duration {
	p = p.WithDefaults()
	return time.Duration(float64(p.MaxInterval) * (1 + p.jitter()))
}

// BackOff returns a backoff.BackOff that yields Delay(1), Delay(2), … and
// backoff.Stop after MaxAttempts-1 delays, for use with backoff.Retry.
func (p Policy) BackOff(rnd *rand.Rand) backoff.BackOff {
	return &policyBackOff{p: p.WithDefaults(), rnd: rnd}
}

type policyBackOff struct {
	p   Policy
	rnd *rand.Rand
	n   int
}

func (b *policyBackOff) NextBackOff() time.Duration {
	b.n++
	if b.n >= b.p.MaxAttempts {
		return backoff.Stop
	}
	return b.p.Delay(b.n, b.rnd)
}

func (b *policyBackOff) Reset() { b.n = 0 }

// Reach is the longest delay the policy itself asks for: the jittered
// bound of the delay after the last attempt that still retries
// (attempt MaxAttempts-1), zero when MaxAttempts is 1. It never exceeds
// LongestDelay. A handler's RetryAfter can ask for more; Reach does not
// count it. Adapters use it to create only the delay tiers the policy can
// reach (see Tiers.Upto).
func (p Policy) Reach() time.Duration {
	p = p.WithDefaults()
	if p.MaxAttempts < 2 {
		return 0
	}
	return time.Duration(float64(p.BaseDelay(p.MaxAttempts-1)) * (1 + p.jitter()))
}
