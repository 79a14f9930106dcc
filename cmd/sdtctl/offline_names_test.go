package main

import (
	"testing"

	"github.com/gosdt/gosdt/sled/offline"
)

// TestFBTBoundary: an fbt probe whose DefineFunc arguments were not all read is still
// named entry or return offline, as live, not by its USDT name.
func TestFBTBoundary(t *testing.T) {
	for _, c := range []struct {
		d    offline.Definition
		want string
		ok   bool
	}{
		{offline.Definition{Provider: "fbt", Name: "app__Store_Put__entry"}, "entry", true},
		{offline.Definition{Provider: "fbt", Name: "app__Handle__return"}, "return", true},
		{offline.Definition{Provider: "fbt", Name: "app__Handle__other"}, "", false},
		{offline.Definition{Provider: "http", Name: "x__entry"}, "", false},
	} {
		if got, ok := fbtBoundary(c.d); got != c.want || ok != c.ok {
			t.Errorf("fbtBoundary(%+v) = %q, %v; want %q, %v", c.d, got, ok, c.want, c.ok)
		}
	}
}
