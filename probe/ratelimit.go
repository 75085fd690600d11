package probe

import (
	"fmt"
	"hash/maphash"
	"math"
	"net/netip"
	"time"
)

// RateLimiter decides whether the listener may answer a sender. Each sender
// gets a token bucket (Rate replies per second, Burst at most); all senders
// together share one more bucket (GlobalRate, GlobalBurst), so a flood from
// spoofed addresses cannot make the listener send more than GlobalRate
// replies per second.
//
// Memory is fixed at construction: the per-sender buckets live in a
// set-associative table of Slots entries (ways entries per set). A sender not
// in the table takes the least recently seen entry of its set, so a flood of
// new addresses evicts old entries instead of growing the table. An evicted
// sender starts again with a full bucket. The hash is keyed with a random
// seed, so a sender cannot choose addresses that collide on purpose.
type RateLimiter struct {
	rate, burst float64
	global      bucket
	globalRate  float64
	globalBurst float64
	seed        maphash.Seed
	entries     []rlEntry
	sets        int
	evictions   uint64
	Now         func() time.Time // clock; time.Now when nil (tests set it)
}

const rlWays = 4

type bucket struct {
	tokens float64
	last   time.Time
}

type rlEntry struct {
	addr  netip.Addr
	b     bucket
	seen  time.Time
	inUse bool
}

// RateConfig configures a RateLimiter. Zero fields take the defaults;
// a burst's default follows its rate (`roce-probe listen --rate` and the
// agent's listener set only the rates).
type RateConfig struct {
	Rate        float64 // replies per second per sender (default 100)
	Burst       float64 // bucket size per sender (default Rate/5, at least 5: 20 for the default rate)
	GlobalRate  float64 // replies per second over all senders (default 1000)
	GlobalBurst float64 // bucket size over all senders (default GlobalRate/10, at least 100: 100 for the default rate)
	Slots       int     // senders tracked at once (default 1024), rounded up to a multiple of 4
}

// NewRateLimiter returns a limiter with the given configuration.
func NewRateLimiter(c RateConfig) (*RateLimiter, error) {
	def := func(v *float64, d float64, name string) error {
		if *v == 0 {
			*v = d
		}
		if !(*v > 0) || math.IsInf(*v, 0) {
			// NaN and +Inf would leave the bucket never empty: no limit at all.
			return fmt.Errorf("probe: rate limit %s %g is out of range: want a finite number > 0 (0: default %g)", name, *v, d)
		}
		return nil
	}
	if err := def(&c.Rate, 100, "rate"); err != nil {
		return nil, err
	}
	if err := def(&c.GlobalRate, 1000, "global rate"); err != nil {
		return nil, err
	}
	// The bursts' defaults are made of the rates, checked above.
	if err := def(&c.Burst, max(c.Rate/5, 5), "burst"); err != nil {
		return nil, err
	}
	if err := def(&c.GlobalBurst, max(c.GlobalRate/10, 100), "global burst"); err != nil {
		return nil, err
	}
	if c.Slots == 0 {
		c.Slots = 1024
	}
	if c.Slots < 0 || c.Slots > 1<<20 {
		return nil, fmt.Errorf("probe: rate limit slots %d is out of range: want 1..%d", c.Slots, 1<<20)
	}
	sets := (c.Slots + rlWays - 1) / rlWays
	return &RateLimiter{
		rate: c.Rate, burst: c.Burst,
		globalRate: c.GlobalRate, globalBurst: c.GlobalBurst,
		global:  bucket{tokens: c.GlobalBurst},
		seed:    maphash.MakeSeed(),
		entries: make([]rlEntry, sets*rlWays),
		sets:    sets,
	}, nil
}

func (r *RateLimiter) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// refill adds tokens for the time since b.last, capped at burst.
func (b *bucket) refill(now time.Time, rate, burst float64) {
	if !b.last.IsZero() {
		if d := now.Sub(b.last).Seconds(); d > 0 {
			b.tokens += d * rate
			if b.tokens > burst {
				b.tokens = burst
			}
		}
	}
	b.last = now
}

// Allow reports whether a reply to addr may be sent now, and takes a token
// from addr's bucket and the global bucket if so.
func (r *RateLimiter) Allow(addr netip.Addr) bool {
	now := r.now()
	addr = addr.Unmap()
	h := maphash.Comparable(r.seed, addr)
	set := r.entries[int(h%uint64(r.sets))*rlWays:][:rlWays]
	var e *rlEntry
	for i := range set {
		if set[i].inUse && set[i].addr == addr {
			e = &set[i]
			break
		}
	}
	if e == nil {
		// Take a free way, or evict the least recently seen one.
		victim := 0
		for i := range set {
			if !set[i].inUse {
				victim = i
				break
			}
			if set[i].seen.Before(set[victim].seen) {
				victim = i
			}
		}
		e = &set[victim]
		if e.inUse {
			r.evictions++
		}
		*e = rlEntry{addr: addr, inUse: true, b: bucket{tokens: r.burst, last: now}}
	}
	e.seen = now
	e.b.refill(now, r.rate, r.burst)
	r.global.refill(now, r.globalRate, r.globalBurst)
	if e.b.tokens < 1 || r.global.tokens < 1 {
		return false
	}
	e.b.tokens--
	r.global.tokens--
	return true
}

// Tracked returns how many senders the table holds now (at most Slots).
func (r *RateLimiter) Tracked() int {
	n := 0
	for i := range r.entries {
		if r.entries[i].inUse {
			n++
		}
	}
	return n
}

// Capacity returns the fixed number of table entries.
func (r *RateLimiter) Capacity() int { return len(r.entries) }

// Evictions returns how many senders were pushed out of the table.
func (r *RateLimiter) Evictions() uint64 { return r.evictions }
