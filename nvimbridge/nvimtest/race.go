//go:build race

package nvimtest

const raceEnabled = true
