package main

import (
	"flag"
	"fmt"
	"strings"
)

// The standard flag package stops at the first positional argument, but the
// CLI contract lets flags come after them too ("kura verify <id> --json").
// Rather than parsing in a loop, the arguments are reordered once so that
// every flag (with its value) comes first; the flag package then does all
// the parsing, with its usual syntax and error messages.

// isFlag reports whether a is a flag token for the flag package: "-x",
// "--x", "-x=v"... A lone "-" (stdin, by convention) and "--" (end of flags)
// are not.
func isFlag(a string) bool {
	return len(a) >= 2 && a[0] == '-' && a != "--"
}

// takesValue reports whether flag token a consumes the next argument as its
// value, the way flag.FlagSet.Parse decides it: a defined, non-boolean flag
// written without "=". Unknown flags take none; Parse reports them.
func takesValue(fs *flag.FlagSet, a string) bool {
	name := a[1:]
	if name != "" && name[0] == '-' {
		name = name[1:]
	}
	if name == "" || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}

// reorderArgs returns args with every flag of fs (and the value of each flag
// that takes one) moved in front of the positional arguments; each group
// keeps its order, and everything after "--" stays positional. The result is
// always a permutation of args. A flag that needs a value but ends the list
// is an error: moved in front of the positionals it would silently take the
// first of them as its value.
func reorderArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	flags := make([]string, 0, len(args))
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			return append(append(flags, "--"), pos...), nil
		}
		if !isFlag(a) {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(fs, a) {
			if i+1 == len(args) {
				return append(flags, pos...), fmt.Errorf("flag needs an argument: %s", a)
			}
			i++
			flags = append(flags, args[i])
		}
	}
	return append(flags, pos...), nil
}

// splitCommand finds the command name: the first positional argument once
// the global flags in front of it (and their values) are skipped. rest is
// args without the name, so that global flags given before the command are
// parsed with the command's own flags.
func splitCommand(globals *flag.FlagSet, args []string) (name string, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !isFlag(a) {
			return a, append(args[:i:i], args[i+1:]...)
		}
		if takesValue(globals, a) {
			i++
		}
	}
	return "", args
}
