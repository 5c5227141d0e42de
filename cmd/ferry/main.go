// Command ferry is the one binary of Ferry: local-first, end-to-end-encrypted
// sync. Each protocol has its subcommands (see "ferry help").
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ferry:", err)
		stop()
		os.Exit(1)
	}
}
