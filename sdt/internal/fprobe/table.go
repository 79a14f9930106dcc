package fprobe

import "sync/atomic"

// The table the stubs find a site's config in, by the return address of the call
// written at the site: open addressing with linear probing (stub_amd64.s, LOOKUP has
// the same hash and size). A key is written after its config, with a release store,
// and before the site's call is written; it is removed (a tombstone) only after the
// call is gone again, and the config itself is never freed, so a stub that found it
// keeps a valid one for as long as it runs.
const (
	tabBits   = 12
	tabSize   = 1 << tabBits
	tombstone = 1
	// MaxSites is how many patched sites (an entry, or one return) there may be at
	// once: half the table, so that a search stays short.
	MaxSites = tabSize / 2
)

var (
	keys [tabSize]uintptr
	cfgs [tabSize]*config
	used int // keys that are neither empty nor tombstones; under mu
)

func hash(k uintptr) int { return int((uint64(k) * 0x9E3779B97F4A7C15) >> (64 - tabBits)) }

// insert adds key k with config c; mu held.
func insert(k uintptr, c *config) bool {
	if used >= MaxSites {
		return false
	}
	free := -1
	for i, n := hash(k), 0; n < tabSize; i, n = (i+1)&(tabSize-1), n+1 {
		switch keys[i] {
		case k:
			cfgs[i] = c // the same site again: its config is the same object
			return true
		case tombstone:
			if free < 0 {
				free = i
			}
			continue
		case 0:
			if free < 0 {
				free = i
			}
		default:
			continue
		}
		break
	}
	cfgs[free] = c
	atomic.StoreUintptr(&keys[free], k)
	used++
	return true
}

// remove makes k's slot a tombstone; mu held.
func remove(k uintptr) {
	for i, n := hash(k), 0; n < tabSize && keys[i] != 0; i, n = (i+1)&(tabSize-1), n+1 {
		if keys[i] == k {
			atomic.StoreUintptr(&keys[i], tombstone)
			used--
			return
		}
	}
}
