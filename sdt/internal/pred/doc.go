// Package pred compiles the predicates of sdtctl's --where and evaluates them on a
// fire's arguments, in the traced process.
//
// A run-time function probe's return path runs the same program itself, as
// fprobe's Pred (Program.Direct): a trace's returns are filtered where they are
// written.
//
// The language is a subset of DTrace's predicates, with Go's precedence: arguments
// (argN or their names), integer literals (decimal, 0x hex, negative), string
// literals ("..." with \" \\ \n \t), true and false; == != < <= > >= between numbers
// (compared as mathematics does, whatever the signedness) or strings (byte order),
// == != between bools; && || ! and parentheses. A bool argument alone is a condition.
//
// A fbt argument whose kind only its fires tell (registry.Unknown) is checked per fire:
// a fire whose argument cannot be compared as the predicate asks does not match.
package pred
