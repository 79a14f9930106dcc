//go:build race

package sdt_test

const raceEnabled = true
