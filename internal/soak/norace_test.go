//go:build !race

package soak

// raceEnabled: see race_test.go.
const raceEnabled = false
