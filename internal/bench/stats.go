//go:build linux

package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// sample is a set of measurements of one quantity.
type sample []float64

// sorted returns a sorted copy.
func (s sample) sorted() sample {
	c := append(sample(nil), s...)
	sort.Float64s(c)
	return c
}

// quantile is the q-quantile (0 ≤ q ≤ 1) with linear interpolation between
// closest ranks; NaN for an empty sample.
func (s sample) quantile(q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := s.sorted()
	if q <= 0 {
		return c[0]
	}
	if q >= 1 {
		return c[len(c)-1]
	}
	pos := q * float64(len(c)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	frac := pos - float64(lo)
	return c[lo] + (c[hi]-c[lo])*frac
}

func (s sample) median() float64 { return s.quantile(0.5) }
func (s sample) min() float64    { return s.quantile(0) }
func (s sample) max() float64    { return s.quantile(1) }

// summary is a sample's median and spread.
type summary struct {
	N                  int
	Median, P25, P75   float64
	Min, Max, P99, P90 float64
}

func (s sample) summarize() summary {
	return summary{
		N: len(s), Median: s.median(), P25: s.quantile(0.25), P75: s.quantile(0.75),
		Min: s.min(), Max: s.max(), P90: s.quantile(0.9), P99: s.quantile(0.99),
	}
}

// ms turns durations into a sample of milliseconds.
func ms(ds []time.Duration) sample {
	out := make(sample, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}

// fmtMS formats milliseconds with a precision that suits the magnitude.
func fmtMS(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v >= 10000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	case v >= 1:
		return fmt.Sprintf("%.2f ms", v)
	default:
		return fmt.Sprintf("%.3f ms", v)
	}
}

// fmtRange formats a spread of milliseconds as "a–b".
func fmtRange(lo, hi float64) string {
	return fmtMS(lo) + "–" + fmtMS(hi)
}

// fmtMB formats bytes as MiB.
func fmtMB(b float64) string {
	switch {
	case math.IsNaN(b):
		return "—"
	case b >= 100<<20:
		return fmt.Sprintf("%.0f MiB", b/(1<<20))
	default:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
}

// fmtRatio formats a ratio as "1.23×".
func fmtRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", r)
}

// ratios divides a by b element-wise (pairs measured together).
func ratios(a, b sample) sample {
	n := len(a)
	if len(b) < n {
		n = len(b)
	}
	out := make(sample, 0, n)
	for i := 0; i < n; i++ {
		if b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}
