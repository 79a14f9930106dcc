//go:build !wasm

package sdt

import "github.com/gosdt/gosdt/sled"

func selfLayout() sled.Layout { return sled.Self() }
