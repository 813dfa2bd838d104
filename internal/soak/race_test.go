//go:build race

package soak

// raceEnabled: the race detector keeps shadow memory that the process
// never returns, so RSS says nothing about leaks under -race.
const raceEnabled = true
