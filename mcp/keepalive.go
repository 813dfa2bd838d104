package mcp

import "time"

// newTickerFunc starts a ticker; the server's is swapped in tests so that
// keepalive runs on ticks the test sends.
type newTickerFunc func(d time.Duration) (ticks <-chan time.Time, stop func())

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// keepalive decides, tick by tick, whether a peer is still alive. It counts
// ticks without a sign of life rather than comparing timestamps, and it
// forgives a wall-clock jump between ticks: after a laptop sleep the
// monotonic clock (and so the ticker) has not advanced on Linux while the
// peer could not answer either, so the liveness window starts over.
type keepalive struct {
	interval time.Duration
	prev     time.Time // wall time of the previous tick
	missed   int
}

// maxMissed is the number of intervals without a sign of life after which a
// peer is dead.
const maxMissed = 2

// tick records a tick at t. seen reports whether the peer sent anything
// since the previous tick. It reports whether the wall clock jumped and
// whether the peer is still to be considered alive.
func (k *keepalive) tick(t time.Time, seen bool) (jumped, alive bool) {
	wall := t.Round(0) // strip the monotonic reading: compare wall clocks
	jumped = !k.prev.IsZero() && wall.Sub(k.prev) > k.interval+k.interval/2
	k.prev = wall
	if seen || jumped {
		k.missed = 0
	} else {
		k.missed++
	}
	return jumped, k.missed < maxMissed
}
