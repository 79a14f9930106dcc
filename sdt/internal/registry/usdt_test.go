package registry

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestParseDuration: parseDuration accepts what time.ParseDuration accepts, with the
// same value, and refuses the rest: Go's own cases, overflows, and random strings of
// the syntax's characters.
func TestParseDuration(t *testing.T) {
	accepted := 0
	check := func(s string) {
		t.Helper()
		want, err := time.ParseDuration(s)
		if err == nil {
			accepted++
		}
		got, ok := parseDuration(s)
		if ok != (err == nil) || ok && got != want {
			t.Errorf("parseDuration(%q) = %v, %v; time.ParseDuration: %v, %v", s, got, ok, want, err)
		}
	}
	for _, s := range []string{
		"0", "5s", "30s", "1478s", "-5s", "+5s", "-0", "+0", "5.0s", "5.6s", "5.s", ".5s",
		"1.0s", "1.00s", "1.004s", "1.0040s", "100.00100s", "10ns", "11us", "12µs", "12μs",
		"13ms", "14s", "15m", "16h", "3h30m", "10.5s4m", "-2m3.4s", "1h2m3s4ms5us6ns",
		"39h9m14.425s", "52763797000ns", "0.3333333333333333333h", "9007199254740993ns",
		"9223372036854775807ns", "9223372036854775.807us", "9223372036854.775807ms",
		"-9223372036854775808ns", "-9223372036854775.808us", "0.100000000000000000000h",
		"0.830103483285477580700h", "", "3", "-", "s", ".", "-.", ".s", "+.s", "1d",
		"\x85\x85", "\xffff", "hello \xffff world", "9223372036854775808ns",
		"9223372036854775.808us", "9223372036854ms775us808ns", "-9223372036854775809ns",
		"100ms", "1ms", "0.5ms", "250us", "1.5s", "2m", "1h", "1e3ms", "1_000ms", " 1s", "1s ",
	} {
		check(s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789.+-nsuµμmh"
	runes := []rune(alphabet)
	var b strings.Builder
	for range 200000 {
		b.Reset()
		for range 1 + r.IntN(12) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		check(b.String())
	}
	if accepted < 1000 {
		t.Errorf("only %d of the strings were durations: the random ones test little", accepted)
	}
}
