// SPDX-License-Identifier: MIT
// A Go program with a known call chain for the stripped-Go tests (e2e 79): main.main ->
// main.work -> main.twice (inlined into work) -> main.fib (recursive), for SECONDS
// (default 1.5).  Built by the test with
// -ldflags='-s -w', so only Go's own function table (.gopclntab) can name it.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

// Small enough to be inlined into work: a frame of its own only by the inline tree.
func twice(n int) int { return fib(n) + 1 }

//go:noinline
func work(n int) int { return twice(n) }

func main() {
	secs := 1.5
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	t := 0
	for time.Now().Before(end) {
		t += work(25)
	}
	fmt.Fprintln(os.Stderr, t&1)
}
