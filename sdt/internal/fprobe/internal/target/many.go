package target

// Many takes more register arguments than a first step of the stubs keeps: ten
// integers (amd64 passes nine in registers, the tenth on the stack) and six floats.
//
//go:noinline
func Many(a, b, c, d, e, f, g, h, i, j int, x, y, z, w, u, v float64) float64 {
	n := Leaf(a, 0) + 2*b + 3*c + 4*d + 5*e + 6*f + 7*g + 8*h + 9*i + 10*j
	return float64(n) + x + 2*y + 3*z + 4*w + 5*u + 6*v
}
