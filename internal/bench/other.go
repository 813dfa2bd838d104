//go:build !linux

// The benchmarks read /proc and use Linux clocks and inotify: on other
// systems the command only says so.

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "bench: Linux only (it reads /proc, process CPU clocks and inotify)")
	os.Exit(2)
}
