package app

import (
	"errors"
	"strconv"
)

// Store and Cache both have a Put: the bare name Put in a spec matches the two (sdtctl's
// values tests), each named in full.
type Store struct{ m map[string]int }

// Put stores n under key; a negative n is refused with an error.
func (s *Store) Put(key string, n int) error {
	if n < 0 {
		return errors.New("negative n " + strconv.Itoa(n))
	}
	if s.m == nil {
		s.m = map[string]int{}
	}
	s.m[key] = n
	return nil
}

// Cache keeps the last n.
type Cache struct{ last int }

// Put keeps n and says whether it changed.
func (c *Cache) Put(key string, n int) bool {
	changed := c.last != n
	c.last = n
	return changed
}

// Extremes returns its arguments: integers beyond 2^53 that a JSON parser reading
// numbers as doubles would round.
func Extremes(i int64, u uint64, ok bool) (int64, uint64) {
	if !ok {
		return 0, 0
	}
	return i, u
}
