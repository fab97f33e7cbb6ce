// SPDX-License-Identifier: MIT
// Signals in Go (tests/e2e/62-plt-names.sh): one goroutine sends itself SIGUSR1 in a loop,
// another receives them, while main spins: samples land in the runtime's signal
// handler, entered from runtime.sigreturn (the restorer).  Argument: none (2 s).
package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

//go:noinline
func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i
	}
	return s
}

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	go func() {
		for range c {
		}
	}()
	go func() {
		p, _ := os.FindProcess(os.Getpid())
		for {
			p.Signal(syscall.SIGUSR1)
		}
	}()
	end := time.Now().Add(2 * time.Second)
	s := 0
	for time.Now().Before(end) {
		s += spin(100000)
	}
	_ = s
}
